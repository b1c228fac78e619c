#!/usr/bin/env bash
# bench/NOTES.md r38, r37d and r39 in one GPU call (run `bash bench/exp/pf_gen.sh` here first and
# carry bench/exp/gen): the partly staged softmax_row and cross-entropy kernels, timed against
# their fully staged winners (two passes, L2 flushed and not), their checks at widths that take
# the rare paths (every streamed group masked; rows realigned because they reach the tile's last
# columns), the odd transpose's line windows of r37d, and its eviction hints (r39).
set -uo pipefail
cd "$(dirname "$0")/../.."
echo "#### r38: timing"
SROW="start:0 t512:0 p9:0 p9h:0 p9b:0 p9bh:0" XENT="start:0 x9b:0 x9bh:0" bash bench/exp/pf_run.sh
echo "#### r38: checks at other widths"
SROW="p9:0 p9h:0" XENT="" WIDTHS="3001 50176 57343" bash bench/exp/pf_run.sh 2>&1 | grep "FLUSH=0" -A1 | grep -v "^--"
SROW="p9b:0 p9bh:0" XENT="x9b:0 x9bh:0" WIDTHS="3001 53240 53247" bash bench/exp/pf_run.sh 2>&1 | grep "FLUSH=0" -A1 | grep -v "^--"
echo "#### r37d: line windows, second form"
RUNS="$(cat bench/exp/tr_runs_r37d.txt)" bash bench/exp/tr_run.sh
echo "#### r39: the odd transpose with eviction hints"
RUNS="$(cat bench/exp/tr_runs_r39.txt)" bash bench/exp/tr_run.sh
