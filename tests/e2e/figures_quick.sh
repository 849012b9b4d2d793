#!/usr/bin/env bash
# figures_quick.sh -- end-to-end check of the experiments and figures: scripts/figures.sh --quick
# into a fresh data folder draws every image of the registry (python/autotm_results/registry.py)
# and a plan picture per Figure 7 network, and prints its summary; every plot script refuses an
# empty data folder and data measured one process a run (older drivers) with one line, exit 1
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

# 1. the whole pipeline, quick: every driver (a comparison per workload and limit, in 2 turns),
# then every figure, the plan pictures and the summary
rc=0
AUTOTM="$BIN" bash "$ATM_ROOT/scripts/figures.sh" --quick --data "$T/data" \
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

for net in tiny_cnn tiny_mlp tiny_gpt; do
  for ext in png pdf; do
    f="$T/figs/plan-$net.$ext"
    [ -s "$f" ] || FAIL+=("plan-$net.$ext: missing or empty after scripts/figures.sh --quick")
  done
done
# inception.py keeps each limit's plans for the next larger limit's --start
for f in static synchronous; do
  compgen -G "$T/data/*/cpu/plans/tiny_cnn-small/1_0/$f.json" >/dev/null ||
    FAIL+=("inception.py --quick kept no $f plan of tiny_cnn at 1:0 under cpu/plans/ (--plans-out)")
done
for what in "^targets (" "Figure 7: .* bars" "Figure 10a" "Figure 11, |error|" "figures.sh took"; do
  grep -q -- "$what" "$T/figures.log" || FAIL+=("scripts/figures.sh --quick printed no summary line '$what'")
done

# 2. a driver sent SIGINT while its autotm call runs ends that call and itself at once (130,
# within 5 s: a tenth of that on an idle machine), keeping the data of the calls before
"$PYTHON" - "$ATM_ROOT/experiments/inception.py" "$BIN" "$T/interrupted" >"$T/interrupt.log" 2>&1 <<'PY' || FAIL+=("inception.py interrupted: $(tail -n 3 "$T/interrupt.log" | tr '\n' ' ')")
import os, signal, subprocess, sys, time
driver, autotm, data = sys.argv[1:]
err_path = data + ".err"
with open(err_path, "wb") as err:
    p = subprocess.Popen([sys.executable, driver, "--quick", "--data", data],
                         env=dict(os.environ, AUTOTM=autotm), stdout=subprocess.DEVNULL, stderr=err)
    t0 = time.monotonic()
    # the driver names each call as it starts it: "[1/N] ..."
    while b"[1/" not in open(err_path, "rb").read():
        if p.poll() is not None or time.monotonic() - t0 > 300:
            sys.exit(f"the driver never started a call (exit {p.poll()})")
        time.sleep(0.05)
    time.sleep(0.5)
    sent = time.monotonic()
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        sys.exit("the driver did not end within 5 s of SIGINT")
    took = time.monotonic() - sent
text = open(err_path, encoding="utf-8", errors="replace").read()
print(f"inception.py: SIGINT during its first call: exit {rc} in {took:.2f} s")
if rc != 130 or "interrupted" not in text:
    sys.exit(f"exit {rc} (want 130 and 'interrupted'); it said: {text[-300:]}")
PY

# 3. a second run finds everything in the data and runs nothing
rc=0
AUTOTM="$BIN" "$PYTHON" "$ATM_ROOT/experiments/conventional.py" --quick --data "$T/data" \
  >"$T/again.log" 2>&1 || rc=$?
if [ "$rc" -ne 0 ]; then
  FAIL+=("conventional.py --quick run again exited $rc")
elif grep -q '^\[' "$T/again.log"; then
  FAIL+=("conventional.py --quick run again ran runs already in the data:")
  while IFS= read -r line; do FAIL+=("    $line"); done < <(grep '^\[' "$T/again.log" | head -n 5)
fi

# refused DATA WHAT -- every plot script given DATA exits 1 with one line on stderr (no
# traceback) and leaves no image; the line names WHAT (a grep pattern)
refused() {
  local data=$1 what=$2 line name script out rc tag
  tag=$(basename "$data")
  for line in "${FIGURES[@]}"; do
    IFS=$'\t' read -r name script _ <<<"$line"
    out="$T/$tag-out-$name"
    mkdir -p "$out"
    rc=0
    "$PYTHON" "$ATM_ROOT/$script" --data "$data" --out "$out" >"$T/$name.$tag.out" \
      2>"$T/$name.$tag.err" || rc=$?
    [ "$rc" -eq 1 ] || FAIL+=("$script on $tag data exited $rc, want 1")
    [ "$(wc -l <"$T/$name.$tag.err")" -eq 1 ] ||
      FAIL+=("$script on $tag data printed $(wc -l <"$T/$name.$tag.err") lines on stderr, want 1")
    grep -q -- "$what" "$T/$name.$tag.err" ||
      FAIL+=("$script on $tag data does not say '$what': $(head -c 300 "$T/$name.$tag.err")")
    if compgen -G "$out/*.png" >/dev/null || compgen -G "$out/*.pdf" >/dev/null; then
      FAIL+=("$script on $tag data left an image: $(cd "$out" && ls)")
    fi
  done
}

# 4. every plot script on an empty data folder
mkdir -p "$T/empty"
refused "$T/empty" "run experiments/"

# 5. data measured one process a run (runs without a comparison id, as older drivers wrote them):
# every plot script refuses it, naming the driver to rerun
"$PYTHON" - "$T/data" "$T/old" "$ATM_ROOT/python" <<'EOF'
import json, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from autotm_results import registry
folders = {e.folder for e in registry.EXPERIMENTS}  # every driver's results folder
shutil.copytree(src, dst)
for root, _, files in os.walk(dst):
    for name in files:
        path = os.path.join(root, name)
        if not name.endswith(".json") or os.path.basename(root) not in folders:
            continue
        doc = json.load(open(path))
        for run in doc.get("runs", []):
            for field in ("comparison", "actual_runtimes", "turns"):
                run.pop(field, None)
        json.dump(doc, open(path, "w"))
EOF
refused "$T/old" "measured one process each.*rerun experiments/"

# 6. a plot script that fails keeps the image an earlier run drew
mkdir -p "$T/kept"
printf 'earlier' >"$T/kept/fig7.png"
"$PYTHON" "$ATM_ROOT/plots/fig7.py" --data "$T/old" --out "$T/kept" >/dev/null 2>&1 || true
[ "$(cat "$T/kept/fig7.png" 2>/dev/null)" = earlier ] ||
  FAIL+=("plots/fig7.py on refused data removed or replaced the earlier fig7.png")

# 7. a Python without matplotlib (here: without the site packages) is told what to install
rc=0
"$PYTHON" -S "$ATM_ROOT/plots/fig7.py" --data "$T/data" --out "$T/nompl" >"$T/nompl.out" \
  2>"$T/nompl.err" || rc=$?
[ "$rc" -eq 1 ] || FAIL+=("plots/fig7.py without matplotlib exited $rc, want 1")
grep -q "install python3-matplotlib" "$T/nompl.err" ||
  FAIL+=("plots/fig7.py without matplotlib does not say what to install: $(head -c 300 "$T/nompl.err")")

# 8. the recomputation driver plans for a GPU model only with --estimate (predictions)
rc=0
"$PYTHON" "$ATM_ROOT/experiments/recompute.py" --gpu-model h100 --data "$T/gm" \
  >"$T/gm.out" 2>"$T/gm.err" || rc=$?
[ "$rc" -eq 2 ] || FAIL+=("recompute.py --gpu-model without --estimate exited $rc, want 2")
grep -q "give --estimate" "$T/gm.err" ||
  FAIL+=("recompute.py --gpu-model without --estimate does not say why: $(head -c 300 "$T/gm.err")")
rc=0
AUTOTM="$BIN" "$PYTHON" "$ATM_ROOT/experiments/recompute.py" --estimate --gpu-model h100 \
  --networks resnet200 --ratios 1:1 --dry-run --data "$T/gm" >"$T/gm.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || FAIL+=("recompute.py --estimate --gpu-model h100 --dry-run exited $rc")
[ "$(grep -c -- '--preset gpu .*--gpu-model h100 .*resnet200-gpu-h100.json' "$T/gm.out")" -eq 5 ] ||
  FAIL+=("recompute.py --estimate --gpu-model h100 --dry-run does not plan the 5 placements on the h100 model: $(head -c 300 "$T/gm.out")")

if [ ${#FAIL[@]} -gt 0 ]; then
  echo "figures_quick: FAILED" >&2
  for f in "${FAIL[@]}"; do echo "  $f" >&2; done
  exit 1
fi
echo "figures_quick: ok (every figure and plan picture drawn from --quick data, the summary printed; every plot script refuses an empty folder and older drivers' data, keeping an earlier image; a Python without matplotlib is told what to install; the recomputation driver plans for a GPU model with --estimate only)"
