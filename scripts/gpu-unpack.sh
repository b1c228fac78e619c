#!/usr/bin/env bash
# Unpacks .gpu-bundle/payload.tar.xz (made by scripts/gpu-bundle.sh) in place, on the GPU machine.
# Uses Python's tarfile, so it needs no xz binary there. Does nothing when there is no payload
# (already unpacked, or bundled with BUNDLE_PACK=0).
set -euo pipefail
cd "$(dirname "$0")/.."
payload=.gpu-bundle/payload.tar.xz
[[ -f $payload ]] || exit 0
python3 - "$payload" <<'PY'
import sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    tar.extractall(".gpu-bundle")
PY
rm -f "$payload"
