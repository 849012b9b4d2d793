#!/usr/bin/env bash
# test.sh -- install what autotm needs, build it twice (optimised, and with AddressSanitizer and
# UBSan), run the whole suite: each test in the build it belongs to
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

atm_install_deps "${ATM_TORCH_PACKAGES[@]}" "${ATM_SOLVER_CLI_PACKAGES[@]}"
# the optimised build is the demo's, with the CUDA backend where the toolkit is (gcc warns
# differently at -O2); the sanitised build is without it, so that both ways compile
atm_build "$ATM_ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DATM_TESTS=ON -DATM_WITH_CUDA=ON
atm_build "$ATM_ROOT/build-test" -DCMAKE_BUILD_TYPE=Debug -DATM_SANITIZE=ON -DATM_TESTS=ON \
  -DATM_WITH_CUDA=OFF
# the tests labelled "optimised" (integer programs, calibrations, profiles, end to end; see
# tests/CMakeLists.txt) and the GPU ones (skipped, 77, without a GPU) on the optimised build;
# every other test under the sanitizers, where memory errors show
status=0
(cd "$ATM_ROOT/build-release" && ctest -j "$(nproc)" --output-on-failure -L 'optimised|gpu' "$@") ||
  status=$?
cd "$ATM_ROOT/build-test"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest -j "$(nproc)" --output-on-failure -LE 'optimised|gpu' "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "test.sh: the optimised build's tests or the sanitised build's failed (see above)" >&2
fi
exit "$status"
