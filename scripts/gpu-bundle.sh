#!/usr/bin/env bash
# Builds everything the GPU machine needs (it has no Rust toolchain) into .gpu-bundle/:
#
#   bin/phobos, bin/phobos-kbench     release binaries, stripped
#   examples/first_use                the phobos crate's example, which its GPU test runs
#   tests/<crate>-<kind>-<target>     release test binaries that hold GPU tests, stripped
#   payload.tar.xz                    bin/, examples/ and tests/ packed (BUNDLE_PACK=0: loose)
#   root                              the workspace's absolute path here (the tests' compiled-in
#                                     CARGO_MANIFEST_DIR paths are under it)
#   target_dir                        cargo's target folder here (CARGO_BIN_EXE_* paths are
#                                     <target_dir>/release/<bin>)
#
# A test binary is bundled when its target holds a test marked `#[ignore = "needs a GPU"]`
# (the convention of every GPU test in the workspace), for the crates phobos-gpu, phobos-cuda,
# phobos-tune, phobos and phobos-cli (BUNDLE_CRATES overrides the list). scripts/gpu-check.sh runs them there; carry `.gpu-bundle` with
# the call. Honours CARGO_TARGET_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-bundle
# BUNDLE_CRATES (e.g. "phobos-cuda") bundles the GPU tests of fewer crates, for a quicker build.
read -r -a crates <<<"${BUNDLE_CRATES:-phobos-gpu phobos-cuda phobos-tune phobos phobos-cli}"
rm -rf "$out" && mkdir -p "$out/bin" "$out/tests" "$out/examples"

target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
pwd -P >"$out/root"
echo "$target_dir" >"$out/target_dir"

# Picks executables out of cargo's JSON messages: `bins` copies the release binaries, `tests`
# the test binaries whose sources hold a GPU test (named crate-kind-target).
pick='
import json, os, re, shutil, sys
mode, dest = sys.argv[1], sys.argv[2]
marker = re.compile(r"ignore\s*=\s*\"needs a GPU")
def has_gpu_tests(target):
    src = target["src_path"]
    if target["kind"][0] in ("lib", "bin"):
        # Unit tests: any file of the source folder of the crate.
        files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.dirname(src))
                 for f in fs if f.endswith(".rs")]
    else:
        files = [src]
    return any(marker.search(open(f, encoding="utf-8", errors="replace").read()) for f in files)
ok = True
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-message" and m["message"]["level"] == "error":
        sys.stderr.write(m["message"].get("rendered") or m["message"]["message"])
        ok = False
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    t = m["target"]
    if mode == "examples" and not m["profile"]["test"] and t["kind"] == ["example"]:
        shutil.copy(m["executable"], os.path.join(dest, t["name"]))
        print(os.path.join(dest, t["name"]))
    elif mode == "bins" and not m["profile"]["test"] and t["kind"] == ["bin"]:
        shutil.copy(m["executable"], os.path.join(dest, t["name"]))
        print(os.path.join(dest, t["name"]))
    elif mode == "tests" and m["profile"]["test"] and has_gpu_tests(t):
        crate = m["package_id"].split("#")[0].split("/")[-1]
        name = "-".join([crate, t["kind"][0], t["name"]])
        shutil.copy(m["executable"], os.path.join(dest, name))
        print(os.path.join(dest, name))
sys.exit(0 if ok else 1)
'
cargo build --release -p phobos-cli --message-format=json | python3 -c "$pick" bins "$out/bin"
cargo build --release -p phobos --example first_use --message-format=json |
  python3 -c "$pick" examples "$out/examples"
pkgs=()
for c in "${crates[@]}"; do pkgs+=(-p "$c"); done
cargo test --release --no-run --message-format=json "${pkgs[@]}" | python3 -c "$pick" tests "$out/tests"
for b in phobos phobos-kbench; do
  [[ -x $out/bin/$b ]] || { echo "gpu-bundle: $out/bin/$b was not built" >&2; exit 1; }
done
ls "$out"/tests/* >/dev/null 2>&1 || { echo "gpu-bundle: no GPU test binary found" >&2; exit 1; }
strip "$out"/bin/* "$out"/tests/* "$out"/examples/* 2>/dev/null || true
# The call carries the working tree and the bundle together, 64 MiB at most, and the stripped
# binaries alone pass that; packed with xz they take about a quarter. scripts/gpu-unpack.sh
# unpacks them there (device-run.sh and gpu-check.sh call it). BUNDLE_PACK=0 leaves them loose.
if [[ ${BUNDLE_PACK:-1} != 0 ]]; then
  tar -C "$out" -cf - bin tests examples | xz -T0 -3 >"$out/payload.tar.xz"
  rm -rf "$out/bin" "$out/tests" "$out/examples"
fi
du -sh "$out"
kib=$(du -sk "$out" | cut -f1)
if ((kib > 56 * 1024)); then
  echo "gpu-bundle: warning: $out is $((kib / 1024)) MiB; with the working tree it may pass the 64 MiB a call carries" >&2
fi
