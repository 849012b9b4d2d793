#!/usr/bin/env bash
# figures_quick.sh -- end-to-end check of the experiments and figures: scripts/figures.sh --quick
# into a fresh data folder draws every image of the registry (python/autotm_results/registry.py),
# and every plot script refuses an empty data folder
#
# usage: tests/e2e/figures_quick.sh AUTOTM_BINARY
# Exit status: 0 passed, 1 failed (what failed is printed), 2 bad usage,
# 77 skipped (no /usr/bin/python3 with matplotlib to draw with).
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHON=/usr/bin/python3

if [ $# -ne 1 ]; then
  echo "usage: $0 AUTOTM_BINARY" >&2
  exit 2
fi
if [ ! -x "$1" ]; then
  echo "figures_quick: $1: no such executable file" >&2
  exit 2
fi
BIN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "figures_quick: skipped: $PYTHON cannot import matplotlib (Debian's python3-matplotlib)" >&2
  exit 77
fi

# the registry: every image (figN, figNa, ...) and every figure's plot script
registry() { PYTHONPATH="$ATM_ROOT/python" "$PYTHON" -m autotm_results.registry "$@"; }
mapfile -t IMAGES < <(registry images)
mapfile -t FIGURES < <(registry figures)
if [ ${#IMAGES[@]} -eq 0 ] || [ ${#FIGURES[@]} -eq 0 ]; then
  echo "figures_quick: FAILED: cannot read the registry of figures (python/autotm_results)" >&2
  exit 1
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/autotm-figures.XXXXXX")
trap 'rm -rf "$T"' EXIT
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
FAIL=()

# 1. the whole pipeline, quick: every driver (each run twice: a repeat runs the plan made for
# the first again), then every figure
rc=0
AUTOTM="$BIN" bash "$ATM_ROOT/scripts/figures.sh" --quick --repeat 2 --data "$T/data" \
  --out "$T/figs" >"$T/figures.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  FAIL+=("scripts/figures.sh --quick exited $rc; the runs that failed, then its last lines:")
  # a driver's summary names each failed run with its command and the end of its stderr
  while IFS= read -r line; do FAIL+=("    $line"); done < <(grep -E -A 7 '^  failed: ' "$T/figures.log" | head -n 60)
  while IFS= read -r line; do FAIL+=("    $line"); done < <(tail -n 25 "$T/figures.log")
fi
for name in "${IMAGES[@]}"; do
  for ext in png pdf; do
    f="$T/figs/$name.$ext"
    [ -s "$f" ] || FAIL+=("$name.$ext: missing or empty after scripts/figures.sh --quick")
  done
done

# 2. a second run finds everything in the data and runs nothing
rc=0
AUTOTM="$BIN" "$PYTHON" "$ATM_ROOT/experiments/conventional.py" --quick --data "$T/data" \
  >"$T/again.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  FAIL+=("conventional.py --quick run again exited $rc")
elif grep -q '^\[' "$T/again.log"; then
  FAIL+=("conventional.py --quick run again ran runs already in the data:")
  while IFS= read -r line; do FAIL+=("    $line"); done < <(grep '^\[' "$T/again.log" | head -n 5)
fi

# 3. every plot script on an empty data folder: non-zero, a message on stderr, no image
mkdir -p "$T/empty"
for line in "${FIGURES[@]}"; do
  IFS=$'\t' read -r name script _ <<<"$line"
  out="$T/empty-out-$name"
  mkdir -p "$out"
  rc=0
  "$PYTHON" "$ATM_ROOT/$script" --data "$T/empty" --out "$out" >"$T/$name.out" 2>"$T/$name.err" ||
    rc=$?
  [ "$rc" -ne 0 ] || FAIL+=("$script on an empty data folder exited 0")
  [ -s "$T/$name.err" ] || FAIL+=("$script on an empty data folder printed nothing on stderr")
  if compgen -G "$out/*.png" >/dev/null || compgen -G "$out/*.pdf" >/dev/null; then
    FAIL+=("$script on an empty data folder left an image: $(cd "$out" && ls)")
  fi
done

if [ ${#FAIL[@]} -gt 0 ]; then
  echo "figures_quick: FAILED" >&2
  for f in "${FAIL[@]}"; do echo "  $f" >&2; done
  exit 1
fi
echo "figures_quick: ok (every figure drawn from --quick data; every plot script refuses an empty folder)"
