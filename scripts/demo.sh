#!/usr/bin/env bash
# demo.sh -- install what autotm needs, build it, and run the main job on a small network
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

MODEL=${1:-tiny_cnn}
OUT="$ATM_ROOT/out"

atm_install_deps
atm_build "$ATM_ROOT/build" -DCMAKE_BUILD_TYPE=Release -DATM_TESTS=OFF
AUTOTM="$ATM_ROOT/build/cli/autotm"
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
for placement in all-fast all-slow random; do
  echo
  echo "== $MODEL, $placement, slow memory emulated as Optane"
  "$AUTOTM" run --model "$MODEL" --placement "$placement" --emulate optane --iters 5 --quiet \
    -o "$OUT/$MODEL.json" --append
done
echo
echo "results: $OUT/$MODEL.json (the losses and weights checksum agree across placements)"
