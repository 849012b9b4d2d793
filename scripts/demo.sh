#!/usr/bin/env bash
# demo.sh -- install what autotm needs, build it, and run the main job on a small network
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

MODEL=${1:-test_vgg}
RATIO=${RATIO:-16:1}
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
for formulation in all-fast all-slow numa 2lm vdnn static synchronous asynchronous; do
  echo
  echo "== $MODEL, $formulation at $RATIO, slow memory emulated as Optane"
  "$AUTOTM" run --model "$MODEL" --formulation "$formulation" --ratio "$RATIO" \
    --emulate optane --cache "$OUT/profiles.json" --iters 5 --quiet -o "$OUT/$MODEL.json" --append
done
echo
echo "== $MODEL at $RATIO: seconds per training step"
/usr/bin/python3 - "$OUT/$MODEL.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
fast = next((r["actual_runtime"] for r in runs if r["formulation"] == "all-fast"), None)
print(f"{'formulation':<14}{'predicted':>11}{'actual':>11}{'vs all-fast':>13}  weights")
for r in runs:
    pred = r.get("predicted_runtime")
    rel = f"{r['actual_runtime'] / fast:.2f}x" if fast else "-"
    print(f"{r['formulation']:<14}{pred if pred is None else format(pred, '.4f'):>11}"
          f"{r['actual_runtime']:>11.4f}{rel:>13}  {r['weights_checksum']}")
PY
echo
echo "results: $OUT/$MODEL.json (the weights checksum is the same for every formulation:"
echo "placement never changes the numbers)"
