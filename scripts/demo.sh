#!/usr/bin/env bash
# demo.sh -- install what autotm needs, build it, and run the main job on a small network
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

MODEL=${1:-test_vgg}
RATIO=${RATIO:-16:1}
TURNS=${TURNS:-3}
OUT="$ATM_ROOT/out"

atm_install_deps
atm_build "$ATM_ROOT/build" -DCMAKE_BUILD_TYPE=Release -DATM_TESTS=OFF
AUTOTM="$ATM_ROOT/build/cli/autotm"
# oneDNN's OpenMP threads spin while they wait by default; on a small, shared
# machine that steals the cores the other threads need
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
mkdir -p "$OUT"
rm -f "$OUT/$MODEL.json"

echo "== the network zoo"
"$AUTOTM" zoo
echo
echo "== $MODEL (small preset)"
"$AUTOTM" zoo --model "$MODEL"
echo
echo "== memory tiers"
"$AUTOTM" tiers --emulate optane
echo
echo "== profiling $MODEL's kernels in every placement of their tensors (slow memory as Optane)"
"$AUTOTM" profile --model "$MODEL" --emulate optane --cache "$OUT/profiles.json"
# the main job: one comparison. Every formulation is planned at slow:fast = $RATIO, and
# their steps are measured side by side, in turns, in one process: the table's ratios to
# all-fast come with their range over the turns.
echo
echo "== $MODEL at $RATIO, slow memory emulated as Optane (in proportion to this machine):"
echo "   every formulation planned, then trained in $TURNS turns side by side"
"$AUTOTM" run --model "$MODEL" --ratio "$RATIO" --emulate optane --cache "$OUT/profiles.json" \
  --formulation all-fast,all-slow,numa,2lm,vdnn,static,synchronous,asynchronous \
  --turns "$TURNS" -o "$OUT/$MODEL.json"
echo
echo "results: $OUT/$MODEL.json, one run per formulation (the weights checksum is the same"
echo "for every formulation: placement never changes the numbers)"
