#!/usr/bin/env bash
# test.sh -- install what autotm needs, build it with AddressSanitizer and UBSan, run the whole suite
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

atm_install_deps "${ATM_TORCH_PACKAGES[@]}" "${ATM_SOLVER_CLI_PACKAGES[@]}"
# two builds: the optimised one the demo uses, with the CUDA backend where the toolkit is
# (gcc warns differently at -O2), and the sanitised test build without it, so that both
# ways compile; the GPU tests of the first run here and skip (77) without a GPU
atm_build "$ATM_ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DATM_TESTS=ON -DATM_WITH_CUDA=ON
atm_build "$ATM_ROOT/build-test" -DCMAKE_BUILD_TYPE=Debug -DATM_SANITIZE=ON -DATM_TESTS=ON \
  -DATM_WITH_CUDA=OFF
(cd "$ATM_ROOT/build-release" && ctest --output-on-failure -L gpu)
cd "$ATM_ROOT/build-test"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest -j "$(nproc)" --output-on-failure "$@"
