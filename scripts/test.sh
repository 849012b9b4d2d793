#!/usr/bin/env bash
# test.sh -- install what autotm needs, build it with AddressSanitizer and UBSan, run the whole suite
set -euo pipefail
ATM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ATM_ROOT/scripts/deps.sh"

atm_install_deps
# the optimised build the demo uses must compile too: gcc warns differently at -O2
atm_build "$ATM_ROOT/build-release" -DCMAKE_BUILD_TYPE=Release -DATM_TESTS=OFF
atm_build "$ATM_ROOT/build-test" -DCMAKE_BUILD_TYPE=Debug -DATM_SANITIZE=ON -DATM_TESTS=ON
cd "$ATM_ROOT/build-test"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest -j "$(nproc)" --output-on-failure "$@"
