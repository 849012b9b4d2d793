#!/usr/bin/env bash
# demo.sh -- install what autotm needs, build it, and run the main job on a small network
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

MODEL=${1:-tiny_cnn}
RATIO=${RATIO:-4:1}
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
# the main job: plan each formulation at slow:fast = $RATIO and train with the plan
for formulation in all-fast numa static synchronous asynchronous; do
  echo
  echo "== $MODEL, $formulation at $RATIO, slow memory emulated as Optane"
  "$AUTOTM" run --model "$MODEL" --formulation "$formulation" --ratio "$RATIO" \
    --emulate optane --cache "$OUT/profiles.json" --iters 5 --quiet -o "$OUT/$MODEL.json" --append
done
echo
echo "results: $OUT/$MODEL.json (predicted and actual step times; the weights checksum is the"
echo "same for every formulation, since placement never changes the numbers)"
