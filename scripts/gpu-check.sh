#!/usr/bin/env bash
# The GPU checks in one run, for a GPU node that has no network and none of
# autotm's packages (docs/gpu.md, "Checking a GPU").
#
#   scripts/gpu-check.sh pack [BUILD]
#       here, on a machine with the packages: build BUILD (default
#       build-release) with CUDA and pack autotm, the GPU tests and every
#       shared library they need that a CUDA machine lacks (GLPK, CBC, oneDNN,
#       memkind, hwloc, jansson, ...) into .gpu/bundle.tar.xz. CUDA's own
#       libraries (cuBLAS, cuDNN) are not packed: the GPU node has them.
#
#   scripts/gpu-check.sh run [--sim] [--quick] [--build DIR] [--budget S] [--out DIR] [--networks A,B]
#                            [--time-limit S] [--steps LIST] [--baselines A,B]
#       there: unpack .gpu/bundle.tar.xz (or use build-release when there is
#       no bundle), then, each step given what is left of S seconds (default
#       540): the CUDA kernels against the CPU's (runtime.cuda_kernels), the
#       GPU runtime (runtime.gpu_cuda), bench/torch_check.py (one SGD step; three AdamW steps),
#       bench/torch_step.py and bench/torch_baselines.py (PyTorch's
#       checkpointing and save_on_cpu, and autotm at their memory) on the GPU,
#       and Figure 12 (experiments/gpu.py with recomputation, CBC plans of
#       --time-limit seconds each, default autotm's 60); on an H100 or H200 the baselines run at
#       the sizes bench/gpu_sizes.py picks from autotm's device model. Logs and results go to DIR (default
#       docs/data/GPU, GPU from nvidia-smi's name: h100, h200, ...), packed
#       into DIR/gpu-check.tar.gz when DIR is $OUT. --sim runs the same steps
#       on the simulated GPU (CPU kernels); --quick on tiny networks (the suite
#       runs --sim --quick); --build DIR takes autotm and the tests from DIR,
#       not from a bundle; --steps runs only the steps named (kernels, gpu,
#       check, step, baselines, fig12; default all), as a second call with
#       what is left of a GPU's time; --baselines names torch_baselines'
#       networks (default resnet200,densenet264).
#
# exit status: 0 every step passed, 1 a step failed or ran out of time (the
# summary names it), 2 bad usage, 5 no GPU (run without --sim).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

die() { echo "gpu-check: $*" >&2; exit 2; }

pack() {
    local build=${1:-build-release}
    cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DATM_TESTS=ON -DATM_WITH_CUDA=ON >/dev/null ||
        die "cmake failed for $build"
    cmake --build "$build" -j"$(nproc)" >/dev/null || die "the build of $build failed"
    grep -q 'ATM_WITH_CUDA:BOOL=ON' "$build/CMakeCache.txt" || die "$build is not built with CUDA"
    local stage=.gpu/stage
    rm -rf "$stage" && mkdir -p "$stage/bin" "$stage/lib"
    cp "$build/cli/autotm" "$build/tests/test_runtime_cuda_kernels" "$build/tests/test_runtime_gpu" "$stage/bin/"
    # every library the binaries load, less glibc's and CUDA's own
    ldd "$stage"/bin/* | awk '/=> \//{print $3}' | sort -u |
        grep -v -E '/usr/local/cuda|/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+)\.so|ld-linux' |
        while read -r lib; do cp -L "$lib" "$stage/lib/"; done
    git rev-parse HEAD >"$stage/commit" 2>/dev/null
    tar -C "$stage" -cJf .gpu/bundle.tar.xz . || die "packing failed"
    rm -rf "$stage"
    grep -qs '^/.gpu/' .git/info/exclude || { mkdir -p .git/info; echo /.gpu/ >>.git/info/exclude; }
    echo "gpu-check: packed $(du -h .gpu/bundle.tar.xz | cut -f1) into .gpu/bundle.tar.xz" \
         "(carry .gpu; then: scripts/gpu-check.sh run)"
}

# the first folder under the usual places that holds library $1
find_lib_dir() {
    local d
    for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
             /usr/lib/x86_64-linux-gnu; do
        [ -e "$d/$1" ] && { echo "$d"; return; }
    done
    local site
    for site in $(python3 -c 'import site,sys; print(" ".join(site.getsitepackages()+[site.getusersitepackages()]))' 2>/dev/null); do
        d=$(find "$site/nvidia" -name "$1" -printf '%h\n' 2>/dev/null | head -1)
        [ -n "$d" ] && { echo "$d"; return; }
    done
}

run() {
    local sim=0 quick=0 build="" budget=540 out="" networks="vgg19,resnet200,densenet264,inception_v4" ilp=""
    local steps=kernels,gpu,check,step,baselines,fig12 bnets=resnet200,densenet264
    while [ $# -gt 0 ]; do
        case $1 in
            --sim) sim=1 ;;
            --quick) quick=1 networks=tiny_cnn ;;
            --build) build=$2; shift ;;
            --budget) budget=$2; shift ;;
            --out) out=$2; shift ;;
            --networks) networks=$2; shift ;;
            --time-limit) ilp=$2; shift ;;
            --steps) steps=$2; shift ;;
            --baselines) bnets=$2; shift ;;
            *) die "unknown option '$1' (valid: --sim, --quick, --build DIR, --budget S, --out DIR, --networks A,B, --time-limit S, --steps LIST, --baselines A,B)" ;;
        esac
        shift
    done
    [[ $budget =~ ^[1-9][0-9]*$ ]] || die "--budget: '$budget' is not a number of seconds"
    [ -z "$ilp" ] || [[ $ilp =~ ^[1-9][0-9]*$ ]] || die "--time-limit: '$ilp' is not a number of seconds"
    local s
    for s in ${steps//,/ }; do
        case $s in kernels|gpu|check|step|baselines|fig12) ;;
            *) die "--steps: unknown step '$s' (valid: kernels, gpu, check, step, baselines, fig12)" ;;
        esac
    done
    wanted() { [[ ",$steps," == *",$1,"* ]]; }
    local start=$SECONDS bin tests gpu
    if [ -n "$build" ]; then
        bin=$build/cli/autotm tests=$build/tests
    elif [ -f .gpu/bundle.tar.xz ]; then
        local b=/tmp/autotm-gpu-bundle
        rm -rf "$b" && mkdir -p "$b" && tar -C "$b" -xJf .gpu/bundle.tar.xz || die "cannot unpack .gpu/bundle.tar.xz"
        local path=$b/lib lib d
        for lib in libcublasLt.so.13 libcublas.so.13 libcudnn.so.9; do
            d=$(find_lib_dir "$lib")
            [ -n "$d" ] && path="$path:$d"
        done
        # the packed libraries for autotm and the tests alone, not for python3 and PyTorch
        for d in autotm test_runtime_cuda_kernels test_runtime_gpu; do
            printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$path" "$b/bin/$d" >"$b/$d"
            chmod +x "$b/$d"
        done
        bin=$b/autotm tests=$b
    else
        bin=$here/build-release/cli/autotm tests=$here/build-release/tests
    fi
    [ -x "$bin" ] || die "no autotm at $bin: run 'scripts/gpu-check.sh pack' first, or build build-release"
    export AUTOTM=$bin OMP_WAIT_POLICY=passive PYTHONUNBUFFERED=1
    local py=python3 p
    for p in python3 /usr/bin/python3; do
        "$p" -c 'import torch' 2>/dev/null && { py=$p; break; }
    done
    if [ $sim = 1 ]; then
        gpu=sim
    else
        command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
            { echo "gpu-check: no NVIDIA GPU here (nvidia-smi finds none); --sim runs the simulated one" >&2; exit 5; }
        gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 |
              grep -o -i -E '[A-Z][0-9]{2,4}[A-Z]*' | head -1 | tr 'A-Z' 'a-z')
        gpu=${gpu:-gpu}
    fi
    local dest=${out:-docs/data/$gpu} packed=0
    if [ -n "$out" ] && [ "$out" = "${OUT:-}" ]; then packed=1 dest=/tmp/gpu-check/$gpu; fi
    mkdir -p "$dest" || die "cannot make $dest"
    local summary=$dest/summary.txt failed=0
    : >"$summary"
    note() { echo "$*" | tee -a "$summary"; }
    local commit
    commit=$( { [ "$bin" = /tmp/autotm-gpu-bundle/autotm ] && cat /tmp/autotm-gpu-bundle/commit; } 2>/dev/null ||
              git rev-parse --short HEAD 2>/dev/null)
    note "# scripts/gpu-check.sh run, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit ${commit:-unknown}$([ $quick = 1 ] && echo ', quick')$([ $sim = 1 ] && echo ', simulated GPU')"
    if [ $sim = 0 ]; then
        nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit \
            --format=csv | tee -a "$summary"
        nvidia-smi dmon -s pucm -d 1 >"$dest/dmon.log" 2>&1 &
        local dmon=$!
        trap 'kill $dmon 2>/dev/null' EXIT
    fi
    local device=cuda gpuflag=cuda
    [ $sim = 1 ] && device=cpu gpuflag=sim

    # step NAME SHARE LOG CMD...: runs CMD with at most SHARE of the seconds left
    step() {
        local name=$1 share=$2 log=$3; shift 3
        local left=$((budget - (SECONDS - start)))
        local give=$((left * share / 100))
        if [ $give -lt 10 ]; then note "$name: SKIPPED, out of time"; failed=1; return; fi
        if [ "${1#/}" != "$1" ] && [ ! -x "$1" ]; then note "$name: skipped, $1 is not built"; return; fi
        local t0=$SECONDS
        timeout -s INT -k 10 "$give" "$@" >"$dest/$log" 2>&1
        local rc=$?
        local verdict=passed
        [ $rc = 77 ] && verdict="skipped (77)"
        [ $rc = 124 ] && verdict="OUT OF TIME (${give} s)"
        [ $rc != 0 ] && [ $rc != 77 ] && [ $rc != 124 ] && verdict="FAILED (exit $rc)"
        [ $rc != 0 ] && [ $rc != 77 ] && failed=1
        note "$name: $verdict in $((SECONDS - t0)) s, log $log"
    }
    local cudaflag=--cuda
    [ $sim = 1 ] && cudaflag=
    wanted kernels && step "runtime.cuda_kernels" 20 test_cuda_kernels.log "$tests/test_runtime_cuda_kernels"
    # on the simulated GPU the suite runs every case of it (runtime.gpu): here three, to check
    # the step itself
    local gpu_cases=()
    [ $sim = 1 ] && gpu_cases=(env "ATM_TEST_FILTER=test_gpu_p*")
    wanted gpu && step "runtime.gpu_cuda" 20 test_gpu.log "${gpu_cases[@]}" "$tests/test_runtime_gpu" $cudaflag
    local models=() tnets=gpt2,vit_b_16 cnets=resnet50,densenet121 tb=8 cb=32 turns=3 iters=5
    [ $sim = 1 ] && tb=2 cb=2
    [ $quick = 1 ] && models=(--models small_cnn,tiny_gpt) tnets=tiny_gpt cnets=tiny_vit turns=1 iters=2
    wanted check && step "torch_check" 25 torch_check.log "$py" bench/torch_check.py --device $device --autotm "$bin" \
        --json "$dest/torch_check.json" "${models[@]}"
    local amodels=(--models small_cnn,gpt_block,vit)
    [ $quick = 1 ] && amodels=(--models small_cnn)
    wanted check && step "torch_check (adamw, 3 steps)" 15 torch_check_adamw.log "$py" bench/torch_check.py \
        --device $device --autotm "$bin" --optimizer adamw --steps 3 \
        --json "$dest/torch_check_adamw.json" "${amodels[@]}"
    wanted step && step "torch_step (transformers)" 20 torch_step_transformers.txt "$py" bench/torch_step.py --device $device \
        --networks $tnets --batch $tb --turns $turns --iters $iters --breakdown --autotm "$bin"
    wanted step && step "torch_step (convolutions)" 20 torch_step_convolutions.txt "$py" bench/torch_step.py --device $device \
        --networks $cnets --batch $cb --turns $turns --iters $iters --breakdown --autotm "$bin"
    # what PyTorch users pick at the memory it takes, and autotm's plans at that memory
    local bb=32
    [ $sim = 1 ] && bb=2
    [ $quick = 1 ] && bnets=resnet18
    local bl=()
    [ -n "$ilp" ] && bl=(--time-limit "$ilp")
    # on a GPU of autotm's device models, the sizes at which its step is bound by the GPU (at
    # least 150 ms and 20 GiB as the model prices it): what the baselines measure
    if [ $sim = 0 ] && [ $quick = 0 ] && wanted baselines &&
        "$bin" plan --model tiny_mlp --gpu-model "$gpu" --estimate --formulation all-fast \
            --quiet --cache "$dest/sizes-profile.json" >/dev/null 2>&1; then
        step "gpu_sizes ($gpu model)" 5 gpu_sizes.txt "$py" bench/gpu_sizes.py --gpu-model "$gpu" \
            --autotm "$bin" --json "$dest/gpu_sizes.json"
        [ -s "$dest/gpu_sizes.json" ] && bl+=(--sizes "$dest/gpu_sizes.json")
        rm -f "$dest/sizes-profile.json"
    fi
    local bshare=30
    wanted fig12 || bshare=95
    wanted baselines && step "torch_baselines" $bshare torch_baselines.txt "$py" bench/torch_baselines.py --device $device \
        --networks $bnets --batch $bb --turns $((turns < 2 ? turns : 2)) --iters $iters \
        --autotm "$bin" --json "$dest/torch_baselines.json" "${bl[@]}"
    # drawn where the node has matplotlib (else here, from the JSON: plots/baselines.py); a
    # simulated GPU's baselines ran on the CPU, with no device memory to draw against
    if [ $sim = 0 ] && wanted baselines && [ -s "$dest/torch_baselines.json" ]; then
        if "$py" -c 'import matplotlib' 2>/dev/null; then
            step "figure 12 against memory" 2 fig12-memory.txt "$py" plots/baselines.py \
                "$dest/torch_baselines.json" -o "$dest/fig12-memory.png"
        else
            note "figure 12 against memory: no matplotlib here; draw it with plots/baselines.py $gpu/torch_baselines.json"
        fi
    fi
    # Figure 12: one network after the other, the smallest of its batches, as time allows
    local net batch
    local -A first=([vgg19]=64 [resnet200]=32 [inception_v4]=64 [densenet264]=32)
    wanted fig12 || networks=
    for net in ${networks//,/ }; do
        batch=${first[$net]:-}
        local args=(--gpu $gpuflag --networks "$net" --turns 3 --iters 3 --recompute --data "$dest/fig12"
                    --machine "$gpu" --autotm "$bin")
        [ -n "$batch" ] && [ $sim = 0 ] && args+=(--batches "$batch")
        [ $sim = 1 ] && args=(--gpu sim --networks "$net" --ratios 1:8 --turns 2 --iters 1 --recompute
                               --data "$dest/fig12" --machine sim --autotm "$bin")
        [ -n "$ilp" ] && args+=(--time-limit "$ilp")
        step "figure 12: $net" 60 "fig12-$net.txt" python3 experiments/gpu.py "${args[@]}"
    done
    note "total $((SECONDS - start)) s of a $budget s budget"
    [ $sim = 0 ] && { kill $dmon 2>/dev/null; trap - EXIT; }
    if [ $packed = 1 ]; then
        tar -C "$dest/.." -czf "$out/gpu-check.tar.gz" "$gpu" && cp "$summary" "$out/summary.txt"
    fi
    return $failed
}

case ${1:-} in
    pack) shift; pack "$@" ;;
    run) shift; run "$@" ;;
    -h|--help|"") sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ] ;;
    *) die "unknown command '$1' (valid: pack, run; --help)" ;;
esac
