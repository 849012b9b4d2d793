#!/usr/bin/env bash
# fuzz.sh -- fuzz the graph JSON loader for a bounded time: scripts/fuzz.sh [SECONDS] (default 60)
#
# Builds fuzz/fuzz_graph with clang in build-fuzz/ (ATM_FUZZ=ON; installs clang and
# libFuzzer through apt when they are missing), runs it on a copy of fuzz/corpus
# with the format's dictionary, and leaves what it found under fuzz/artifacts/:
#   crashes/     inputs that crashed, leaked, hung or broke the round trip;
#                reproduce one with: build-fuzz/fuzz/fuzz_graph FILE
#   new-corpus/  inputs that reach code the seeds do not; copy the useful ones into
#                fuzz/corpus (keep it under 100 files) so the test suite replays them
# Environment: ATM_FUZZ_BUILD (build folder, default build-fuzz), ATM_FUZZ_JOBS
# (parallel fuzzing processes, default 1).
set -euo pipefail

secs=${1:-60}
case $secs in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS]   (a whole number of seconds, default 60)" >&2
	exit 2
	;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
build=${ATM_FUZZ_BUILD:-$root/build-fuzz}
jobs=${ATM_FUZZ_JOBS:-1}
art=$root/fuzz/artifacts
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
	-DCMAKE_BUILD_TYPE=RelWithDebInfo >"$tmp/configure.log" || { cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$build" --target fuzz_graph -j "$(nproc)"
fuzzer=$build/fuzz/fuzz_graph

mkdir -p "$art/crashes" "$art/new-corpus" "$tmp/work" "$tmp/merged"
cp "$root"/fuzz/corpus/* "$tmp/work/"
cp "$root"/fuzz/corpus/* "$tmp/merged/"
parallel=()
[ "$jobs" -gt 1 ] && parallel=(-fork="$jobs" -ignore_crashes=1)

touch "$tmp/start"
echo "fuzz.sh: fuzzing for ${secs}s ($jobs process(es)); crashes go to $art/crashes/" >&2
status=0
"$fuzzer" "$tmp/work" -dict="$root/fuzz/graph.dict" -max_total_time="$secs" -timeout=10 \
	-rss_limit_mb=4096 -max_len=16384 -artifact_prefix="$art/crashes/" -print_final_stats=1 \
	"${parallel[@]}" || status=$?

# keep only the inputs that add coverage beyond the seeds
"$fuzzer" -merge=1 "$tmp/merged" "$tmp/work" >"$tmp/merge.log" 2>&1 || true
n_new=0
for f in "$tmp/merged"/*; do
	if [ ! -e "$root/fuzz/corpus/$(basename "$f")" ]; then
		cp "$f" "$art/new-corpus/"
		n_new=$((n_new + 1))
	fi
done
n_crash=$(find "$art/crashes" -type f -newer "$tmp/start" | wc -l)
echo "fuzz.sh: $n_new new input(s) in $art/new-corpus, $n_crash new file(s) in $art/crashes" >&2
if [ "$status" -ne 0 ] || [ "$n_crash" -gt 0 ]; then
	echo "fuzz.sh: the fuzzer found a problem (exit $status); see $art/crashes" >&2
	exit 1
fi
