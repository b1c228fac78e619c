#!/usr/bin/env bash
# Where every running phobos-kbench process (tuner and workers) is: its command line, each
# thread's kernel wait channel and, where gdb is installed, every thread's backtrace. For a run
# that stops making progress on the GPU machine: `scripts/stacks.sh > stacks.txt`.
for p in $(pgrep -f phobos-kbench); do
  echo "== pid $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)"
  for t in /proc/"$p"/task/*; do
    echo "  thread ${t##*/} $(cat "$t"/comm 2>/dev/null): $(cat "$t"/wchan 2>/dev/null)"
  done
  if command -v gdb >/dev/null; then
    timeout 60 gdb -p "$p" -batch -ex "thread apply all bt 30" 2>&1 | grep -E '^(Thread|#)' | head -200
  fi
done
