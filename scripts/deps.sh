#!/usr/bin/env bash
# deps.sh -- install the Debian packages autotm builds and runs with (sourced by the other scripts)

# coinor-libcbc-dev: the CBC solver backend (--solver cbc, and what --solver auto picks); a
# build without it plans with GLPK alone. libopenmpi-dev and openmpi-bin: data parallelism over
# MPI (comm/; mpirun starts the ranks, and the suite's tests of 2 and 3 ranks); a build without
# them runs as one rank and refuses to be one of mpirun's several
ATM_PACKAGES=(
  build-essential cmake pkg-config
  libjansson-dev libcmocka-dev libglpk-dev coinor-libcbc-dev libmemkind-dev libpmem2-dev
  libhwloc-dev libdnnl-dev libopenmpi-dev openmpi-bin
  python3-matplotlib
)

# the PyTorch importer (python/autotm_torch) and its check against PyTorch, which the test suite
# runs: Debian's torch 1.13 and torchvision 0.14; and OpenBLAS, without which Debian's torch
# multiplies matrices with the reference BLAS (a GPT-2 step: 80 s instead of 4) and
# bench/torch_step.py would compare autotm with a PyTorch nobody runs
ATM_TORCH_PACKAGES=(python3-torch python3-torchvision libopenblas0-pthread)

# the glpsol and cbc commands, with which the suite checks that the model file autotm writes
# (plan --write-model) reads alike in other solvers
ATM_SOLVER_CLI_PACKAGES=(glpk-utils coinor-cbc)

# atm_install_deps -- apt-get install whatever of ATM_PACKAGES (and "$@") is missing
atm_install_deps() {
  local missing=() pkg sudo=""
  for pkg in "${ATM_PACKAGES[@]}" "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "autotm: need root (or sudo) to install: ${missing[*]}" >&2; return 1; }
    sudo="sudo"
  fi
  echo "autotm: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# atm_build DIR [CMAKE ARGS...] -- configure and build autotm into DIR
atm_build() {
  local dir=$1; shift
  cmake -S "$ATM_ROOT" -B "$dir" "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}
