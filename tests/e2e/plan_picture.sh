#!/usr/bin/env bash
# plan_picture.sh -- end-to-end check of the picture of a plan: autotm plan --timeline on a tiny
# network, plots/plan.py drawing it (PNG and PDF), and refusing bad timelines with a message
#
# usage: tests/e2e/plan_picture.sh AUTOTM_BINARY
# Exit status: 0 passed, 1 failed (what failed is printed), 2 bad usage,
# 77 skipped (no /usr/bin/python3 with matplotlib to draw with).
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PYTHON=/usr/bin/python3
PLOT="$ATM_ROOT/plots/plan.py"

if [ $# -ne 1 ]; then
  echo "usage: $0 AUTOTM_BINARY" >&2
  exit 2
fi
if [ ! -x "$1" ]; then
  echo "plan_picture: $1: no such executable file" >&2
  exit 2
fi
BIN=$1
if ! "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
  echo "plan_picture: skipped: $PYTHON cannot import matplotlib (Debian's python3-matplotlib)" >&2
  exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/autotm-plan-picture.XXXXXX")
trap 'rm -rf "$T"' EXIT
FAIL=()

# refused -- NAME FILE: plots/plan.py on FILE exits 1 with a message and no traceback, and
# leaves no image
refused() {
  local name=$1 file=$2 rc=0
  "$PYTHON" "$PLOT" "$file" -o "$T/out/$name.png" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  [ "$rc" -eq 1 ] || FAIL+=("plots/plan.py on $name exited $rc, want 1")
  [ -s "$T/$name.err" ] || FAIL+=("plots/plan.py on $name printed nothing on stderr")
  if grep -q Traceback "$T/$name.err"; then
    FAIL+=("plots/plan.py on $name printed a traceback: $(tail -n 1 "$T/$name.err")")
  fi
  if [ -e "$T/out/$name.png" ] || [ -e "$T/out/$name.pdf" ]; then
    FAIL+=("plots/plan.py on $name left an image")
  fi
}

# 1. a timeline of an asynchronous plan (moves of both kinds) from an estimated profile
rc=0
"$BIN" plan --model tiny_cnn --ratio 4:1 --formulation asynchronous --estimate --emulate optane \
  --cache "$T/profiles.json" --timeline "$T/tl.json" -o "$T/plan.json" --quiet \
  >"$T/plan.out" 2>"$T/plan.err" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "plan_picture: FAILED: autotm plan --timeline exited $rc: $(tail -n 3 "$T/plan.err")" >&2
  exit 1
fi

# 2. drawn, to -o and beside the timeline by default
mkdir -p "$T/out"
rc=0
"$PYTHON" "$PLOT" "$T/tl.json" -o "$T/out/picture.png" >"$T/draw.out" 2>"$T/draw.err" || rc=$?
[ "$rc" -eq 0 ] || FAIL+=("plots/plan.py exited $rc: $(tail -n 3 "$T/draw.err")")
for ext in png pdf; do
  [ -s "$T/out/picture.$ext" ] || FAIL+=("picture.$ext: missing or empty")
done
if [ -s "$T/out/picture.png" ] && [ "$(head -c 4 "$T/out/picture.png" | tail -c 3)" != "PNG" ]; then
  FAIL+=("picture.png is not a PNG image")
fi
grep -q "picture.png" "$T/draw.out" || FAIL+=("plots/plan.py did not print the PNG's path")
rc=0
"$PYTHON" "$PLOT" "$T/tl.json" >/dev/null 2>"$T/default.err" || rc=$?
[ "$rc" -eq 0 ] && [ -s "$T/tl.png" ] && [ -s "$T/tl.pdf" ] ||
  FAIL+=("plots/plan.py without -o: exit $rc, want tl.png and tl.pdf beside the timeline")

# 3. bad timelines: truncated, another file format, missing, a field of the wrong type
head -c "$(($(wc -c <"$T/tl.json") / 2))" "$T/tl.json" >"$T/truncated.json"
refused truncated "$T/truncated.json"
refused plan-file "$T/plan.json"
refused missing "$T/no-such-timeline.json"
"$PYTHON" - "$T/tl.json" "$T/wrong-type.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["kernels"][0]["fast_total_bytes"] = "many"
json.dump(doc, open(sys.argv[2], "w"))
EOF
refused wrong-type "$T/wrong-type.json"
# an image there before a failed draw is kept as it was
cp "$T/out/picture.png" "$T/out/kept.png"
"$PYTHON" "$PLOT" "$T/truncated.json" -o "$T/out/kept.png" >/dev/null 2>&1 || true
cmp -s "$T/out/picture.png" "$T/out/kept.png" ||
  FAIL+=("plots/plan.py on a bad timeline removed or replaced the earlier image")

# 4. the command line: --help, and a usage error
"$PYTHON" "$PLOT" --help >"$T/help.out" 2>&1 || FAIL+=("plots/plan.py --help exited non-zero")
grep -q "TIMELINE" "$T/help.out" || FAIL+=("plots/plan.py --help does not name the timeline")
rc=0
"$PYTHON" "$PLOT" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 2 ] || FAIL+=("plots/plan.py without a timeline exited $rc, want 2")

if [ ${#FAIL[@]} -gt 0 ]; then
  echo "plan_picture: FAILED" >&2
  for f in "${FAIL[@]}"; do echo "  $f" >&2; done
  exit 1
fi
echo "plan_picture: passed"
