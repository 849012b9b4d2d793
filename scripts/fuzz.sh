#!/usr/bin/env bash
# fuzz.sh -- fuzz every loader for a bounded time: scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Targets (fuzz/fuzz_TARGET.c, seeds in fuzz/corpus/TARGET, dictionary fuzz/TARGET.dict):
#   graph     graph JSON files (--graph)          plan      plan files (--placement FILE)
#   profile   profile caches (--cache)            tierspec  tier specs (--emulate FILE)
#   results   results files --append reads     safetensors  --weights-in and --data files
#   forward   forward graphs (--graph, the PyTorch importer's)
#   machine   the machine file of roofline calibrations (--estimate)
# Each named target (default: all) runs SECONDS (default 60) one after another. Builds them with
# clang in build-fuzz/ (ATM_FUZZ=ON; installs clang and libFuzzer through apt when they are
# missing) and leaves what they found under fuzz/artifacts/TARGET/:
#   crashes/     inputs that crashed, leaked, hung or broke a loader's promise;
#                reproduce one with: build-fuzz/fuzz/fuzz_TARGET FILE
#   new-corpus/  inputs that reach code the seeds do not; copy the useful ones into
#                fuzz/corpus/TARGET so that the test suite replays them
# and prints how many inputs each target ran. Environment: ATM_FUZZ_BUILD (build folder,
# default build-fuzz), ATM_FUZZ_JOBS (parallel fuzzing processes per target, default 1).
set -euo pipefail

all_targets=(graph plan profile tierspec results safetensors forward machine)
secs=${1:-60}
case $secs in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS] [TARGET...]   (whole seconds per target, default 60;" \
		"targets: ${all_targets[*]})" >&2
	exit 2
	;;
esac
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
	case " ${all_targets[*]} " in
	*" $t "*) ;;
	*)
		echo "fuzz.sh: unknown target '$t' (valid: ${all_targets[*]})" >&2
		exit 2
		;;
	esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATM_FUZZ_BUILD:-$root/build-fuzz}
jobs=${ATM_FUZZ_JOBS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# have_libfuzzer -- clang is here and can link a libFuzzer target
have_libfuzzer() {
	command -v clang >/dev/null 2>&1 || return 1
	printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' >"$tmp/probe.c"
	clang -fsanitize=fuzzer "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1
}

if ! have_libfuzzer; then
	echo "fuzz.sh: clang with libFuzzer not found; installing clang libclang-rt-14-dev" >&2
	sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -q
	$sudo apt-get install -y clang libclang-rt-14-dev
	have_libfuzzer || { echo "fuzz.sh: clang still cannot link a libFuzzer target" >&2; exit 1; }
fi

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DATM_FUZZ=ON -DATM_TESTS=OFF \
	-DATM_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$tmp/configure.log" ||
	{ cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$build" --target "${targets[@]/#/fuzz_}" -j "$(nproc)"

parallel=()
[ "$jobs" -gt 1 ] && parallel=(-fork="$jobs" -ignore_crashes=1)
failed=0
summary=()
for t in "${targets[@]}"; do
	fuzzer=$build/fuzz/fuzz_$t
	art=$root/fuzz/artifacts/$t
	work=$tmp/$t/work
	merged=$tmp/$t/merged
	mkdir -p "$art/crashes" "$art/new-corpus" "$work" "$merged"
	cp "$root/fuzz/corpus/$t"/* "$work/"
	cp "$root/fuzz/corpus/$t"/* "$merged/"
	touch "$tmp/$t/start"
	echo "fuzz.sh: fuzzing $t for ${secs}s ($jobs process(es)); crashes go to $art/crashes/" >&2
	status=0
	"$fuzzer" "$work" -dict="$root/fuzz/$t.dict" -max_total_time="$secs" -timeout=10 \
		-rss_limit_mb=4096 -max_len=16384 -artifact_prefix="$art/crashes/" -print_final_stats=1 \
		"${parallel[@]}" 2>"$tmp/$t/log" || status=$?
	tail -n 40 "$tmp/$t/log" >&2
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/$t/log" | tail -n 1)
	# keep only the inputs that add coverage beyond the seeds
	"$fuzzer" -merge=1 "$merged" "$work" >"$tmp/$t/merge.log" 2>&1 || true
	n_new=0
	for f in "$merged"/*; do
		if [ ! -e "$root/fuzz/corpus/$t/$(basename "$f")" ]; then
			cp "$f" "$art/new-corpus/"
			n_new=$((n_new + 1))
		fi
	done
	n_crash=$(find "$art/crashes" -type f -newer "$tmp/$t/start" | wc -l)
	summary+=("$t: ${execs:-?} inputs in ${secs}s, $n_new new in $art/new-corpus, $n_crash new crash(es)")
	if [ "$status" -ne 0 ] || [ "$n_crash" -gt 0 ]; then
		echo "fuzz.sh: $t found a problem (exit $status); see $art/crashes" >&2
		failed=1
	fi
done
printf 'fuzz.sh: %s\n' "${summary[@]}" >&2
exit $failed
