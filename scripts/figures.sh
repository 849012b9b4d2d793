#!/usr/bin/env bash
# figures.sh -- run the experiments' missing runs and draw every figure
#
# usage: scripts/figures.sh [--quick] [--data DIR] [--out DIR] [--gpu sim|cuda] [DRIVER OPTIONS...]
#        scripts/figures.sh --list
#
# Runs every experiment driver of the registry (python/autotm_results/registry.py: each runs
# only the comparisons its data folder lacks), then every plot script of its figures, then
# draws one plan picture per Figure 7 network at 4:1 (figures/plan-NETWORK.png), and says how
# long each step took, where the figures are and the figures' own summary
# (python3 -m autotm_results.targets: how tight the measured ratios were).
#   --list         the figures: images, plot script, driver, data folder (nothing run)
#   --quick        the drivers' CI mode: tiny networks, 2 turns of one step, seconds in all
#   --data DIR     the data folder (default: data under the repository)
#   --out DIR      where the figures go (default: figures under the repository)
#   --gpu MODE     sim (default: a simulated GPU) or cuda, for gpu.py only
#   anything else  passed to every driver (--preset, --networks, --ratios, --turns, --iters, --estimate,
#                  --force, --machine, --cache, --autotm, --time-limit, --dry-run, ...;
#                  see 'experiments/conventional.py --help'); --machine also goes to the plots
# With --estimate (plans only, no step measured) the drivers and figures the registry marks as
# measured only (gpu.py, Figures 11 and 12) are left out (run figures.sh without --estimate, or
# the plot scripts, for them). With --dry-run the drivers print their command lines, nothing
# runs and nothing is drawn.
# It builds and installs nothing: without an autotm binary it says how to get one.
# Exit status: 0 every step ok, 1 a step failed (or no binary), 2 bad usage, 130 interrupted.
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}

usage() { sed -n '4,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
# registry WHAT -- the experiments or figures, one a line (python -m autotm_results.registry)
registry() {
  PYTHONPATH="$ATM_ROOT/python${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" -m autotm_results.registry "$@"
}

DATA="$ATM_ROOT/data"
OUT="$ATM_ROOT/figures"
QUICK=()
GPU_ARGS=()
PASS=()
AUTOTM_ARG=""
MACHINE_ARG=()
CACHE=""
EMULATE=optane
ESTIMATE=0
DRY_RUN=0
LIST=0
need_value() {
  if [ $# -lt 2 ] || [ -z "$2" ]; then
    echo "figures.sh: $1 needs a value (try --help)" >&2
    exit 2
  fi
}
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --list) LIST=1; shift ;;
    --quick) QUICK=(--quick); shift ;;
    --data) need_value "$@"; DATA=$2; shift 2 ;;
    --data=*) DATA=${1#--data=}; shift ;;
    --out) need_value "$@"; OUT=$2; shift 2 ;;
    --out=*) OUT=${1#--out=}; shift ;;
    --gpu) need_value "$@"; GPU_ARGS=(--gpu "$2"); shift 2 ;;
    --gpu=*) GPU_ARGS=(--gpu "${1#--gpu=}"); shift ;;
    --autotm) need_value "$@"; AUTOTM_ARG=$2; PASS+=("$1" "$2"); shift 2 ;;
    --autotm=*) AUTOTM_ARG=${1#--autotm=}; PASS+=("$1"); shift ;;
    --machine) need_value "$@"; MACHINE_ARG=(--machine "$2"); PASS+=("$1" "$2"); shift 2 ;;
    --machine=*) MACHINE_ARG=(--machine "${1#--machine=}"); PASS+=("$1"); shift ;;
    --cache) need_value "$@"; CACHE=$2; PASS+=("$1" "$2"); shift 2 ;;
    --cache=*) CACHE=${1#--cache=}; PASS+=("$1"); shift ;;
    --emulate) need_value "$@"; EMULATE=$2; PASS+=("$1" "$2"); shift 2 ;;
    --emulate=*) EMULATE=${1#--emulate=}; PASS+=("$1"); shift ;;
    --estimate) ESTIMATE=1; PASS+=("$1"); shift ;;
    --dry-run) DRY_RUN=1; PASS+=("$1"); shift ;;
    *) PASS+=("$1"); shift ;;
  esac
done
case "${GPU_ARGS[1]:-sim}" in
  sim|cuda) ;;
  *) echo "figures.sh: --gpu ${GPU_ARGS[1]}: expected sim or cuda" >&2; exit 2 ;;
esac
[ -x "$PYTHON" ] || { echo "figures.sh: $PYTHON not found (Debian's python3 with python3-matplotlib)" >&2; exit 1; }
if [ "$LIST" -eq 1 ]; then
  registry table
  exit
fi
# the registry read before anything runs: NAME, SCRIPT, why it has no --estimate (-: it has), ...
mapfile -t EXPERIMENTS < <(registry experiments)
mapfile -t FIGURES < <(registry figures)
if [ ${#EXPERIMENTS[@]} -eq 0 ] || [ ${#FIGURES[@]} -eq 0 ]; then
  echo "figures.sh: cannot read the registry of experiments and figures (python/autotm_results)" >&2
  exit 1
fi

# the autotm binary, looked for as the drivers look for it
find_autotm() {
  local p
  if [ -n "$AUTOTM_ARG" ]; then
    [ -x "$AUTOTM_ARG" ] && { echo "$AUTOTM_ARG"; return 0; }
    return 1
  fi
  if [ -n "${AUTOTM:-}" ]; then
    command -v "$AUTOTM" 2>/dev/null && return 0
    return 1
  fi
  for p in "$ATM_ROOT/build-release/cli/autotm" "$ATM_ROOT/build/cli/autotm"; do
    [ -x "$p" ] && { echo "$p"; return 0; }
  done
  command -v autotm 2>/dev/null
}
if ! BIN=$(find_autotm) && [ "$DRY_RUN" -eq 0 ]; then
  {
    if [ -n "$AUTOTM_ARG" ]; then
      echo "figures.sh: --autotm $AUTOTM_ARG: no such executable file."
    elif [ -n "${AUTOTM:-}" ]; then
      echo "figures.sh: AUTOTM=$AUTOTM: no such executable file."
    else
      echo "figures.sh: no autotm binary: looked for $ATM_ROOT/build-release/cli/autotm, $ATM_ROOT/build/cli/autotm and autotm on PATH (or give AUTOTM=PATH or --autotm PATH)."
    fi
    echo "Build it first: scripts/demo.sh (installs what it needs and builds build/cli/autotm), or"
    echo "  cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release -j"
  } >&2
  exit 1
fi

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { s = b - a; if (s < 60) printf "%.1f s", s; else printf "%d min %d s", s / 60, s % 60 }'; }

STEPS=()
FAILED=()
T_ALL=$(now)

# step NAME COMMAND... -- run one step, note its time and outcome; stop at once when interrupted
step() {
  local name=$1 t0 rc=0
  shift
  echo >&2
  echo "== $name" >&2
  t0=$(now)
  "$@" || rc=$?
  if [ "$rc" -eq 130 ]; then
    echo "figures.sh: interrupted during $name" >&2
    exit 130
  fi
  if [ "$rc" -eq 0 ]; then
    STEPS+=("$(printf '%-14s ok      %s' "$name" "$(elapsed "$t0")")")
  else
    STEPS+=("$(printf '%-14s FAILED  %s (exit %d)' "$name" "$(elapsed "$t0")" "$rc")")
    FAILED+=("$name")
  fi
}

# left_out NAME WHY -- with --estimate, say that NAME is left out and why (WHY -: it is not)
left_out() {
  { [ "$ESTIMATE" -eq 1 ] && [ "$2" != - ]; } || return 1
  echo >&2
  echo "== $1: left out with --estimate ($2)" >&2
}

export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
DRIVER_ARGS=(--data "$DATA" ${QUICK[@]+"${QUICK[@]}"} ${PASS[@]+"${PASS[@]}"})
for line in "${EXPERIMENTS[@]}"; do
  IFS=$'\t' read -r name driver gpu why <<<"$line"
  ! left_out "$name" "$why" || continue
  args=("${DRIVER_ARGS[@]}")
  [ "$gpu" != gpu ] || args+=(${GPU_ARGS[@]+"${GPU_ARGS[@]}"})
  step "$name" "$PYTHON" "$ATM_ROOT/$driver" "${args[@]}"
done

if [ "$DRY_RUN" -eq 1 ]; then
  echo >&2
  echo "figures.sh: dry run: no figure drawn" >&2
else
  mkdir -p "$OUT"
  for line in "${FIGURES[@]}"; do
    IFS=$'\t' read -r name script why _ <<<"$line"
    ! left_out "$name" "$why" || continue
    if [ ! -f "$ATM_ROOT/$script" ]; then
      echo >&2
      echo "== $name: $ATM_ROOT/$script is missing" >&2
      STEPS+=("$(printf '%-14s FAILED  (no %s)' "$name" "$script")")
      FAILED+=("$name")
      continue
    fi
    step "$name" "$PYTHON" "$ATM_ROOT/$script" --data "$DATA" --out "$OUT" ${MACHINE_ARG[@]+"${MACHINE_ARG[@]}"}
  done
fi

# the machine's folder of the data: --machine, else the only one the drivers wrote cpu/ results in
machine_dir() {
  local d found=()
  if [ ${#MACHINE_ARG[@]} -gt 0 ]; then
    echo "$DATA/${MACHINE_ARG[1]}"
    return 0
  fi
  for d in "$DATA"/*/; do
    compgen -G "$d/cpu/*.json" >/dev/null && found+=("${d%/}")
  done
  [ ${#found[@]} -eq 1 ] || return 1
  echo "${found[0]}"
}

# plan_pictures -- one picture of the asynchronous plan at 4:1 per Figure 7 network, from the
# profile cache the drivers filled: autotm plan --timeline, then plots/plan.py
plan_pictures() {
  local mdir=$1 net preset tl cache rc=0 flags=()
  cache=${CACHE:-$mdir/profiles.json}
  [ "$EMULATE" = none ] || flags+=(--emulate "$EMULATE")
  [ "$ESTIMATE" -eq 0 ] || flags+=(--estimate)
  mkdir -p "$mdir/timelines"
  while IFS=$'\t' read -r net preset; do
    tl="$mdir/timelines/$net-$preset-4x1.json"
    echo "plan picture: $net ($preset) at 4:1 -> $OUT/plan-$net.png" >&2
    "$BIN" plan --model "$net" --preset "$preset" --ratio 4:1 --formulation asynchronous \
      ${flags[@]+"${flags[@]}"} --cache "$cache" --timeline "$tl" -o "$tl.plan" --quiet || { rc=1; continue; }
    "$PYTHON" "$ATM_ROOT/plots/plan.py" "$tl" -o "$OUT/plan-$net.png" >/dev/null || rc=1
  done < <(PYTHONPATH="$ATM_ROOT/python" "$PYTHON" -m autotm_results.targets "$mdir" --pictures)
  return $rc
}

MDIR=""
if [ "$DRY_RUN" -eq 0 ]; then
  if MDIR=$(machine_dir); then
    step "plan pictures" plan_pictures "$MDIR"
  else
    echo >&2
    echo "== plan pictures: no single machine folder with cpu/ results in $DATA (give --machine)" >&2
    STEPS+=("$(printf '%-14s FAILED  (no machine folder)' "plan pictures")")
    FAILED+=("plan pictures")
  fi
fi

echo >&2
echo "figures.sh: steps, in $(elapsed "$T_ALL") in all:" >&2
for s in "${STEPS[@]}"; do echo "  $s" >&2; done
echo "data:    $DATA" >&2
if [ "$DRY_RUN" -eq 0 ]; then
  echo "figures: $OUT" >&2
  (cd "$OUT" && ls -1 -- *.png *.pdf 2>/dev/null | sed 's/^/  /') >&2 || true
fi
if [ -n "$MDIR" ]; then
  WALL_S=$(awk -v a="$T_ALL" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  echo >&2
  PYTHONPATH="$ATM_ROOT/python" "$PYTHON" -m autotm_results.targets "$MDIR" --wall-s "$WALL_S" >&2 ||
    FAILED+=("summary")
fi
if [ ${#FAILED[@]} -gt 0 ]; then
  echo "figures.sh: failed: ${FAILED[*]}" >&2
  exit 1
fi
