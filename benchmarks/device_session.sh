#!/usr/bin/env bash
# One lent GPU machine session, as one prepared script (docs/nvgpu.md, "On a GPU"):
#   1. pytest -m gpu (numerics against eager on the GPU, CUDA tensors in place, the AOT
#      library, flash attention, SGEMM, precision modes);
#   2. benchmarks/gpu.py (accel vs eager, cuBLAS/SDPA and inductor, CUDA events);
#   3. compute-sanitizer memcheck over the matmul and attention kernels;
#   4. ResNet-50/18 against onnxruntime in one process (benchmarks/interleaved.py), then
#      the CPU benchmarks on the machine's CPU (a second x86: AVX-512, all its cores and 1),
#      then benchmarks/conv_scaling.py (ResNet-18 per conv layer, all cores and 1);
#   5. the training steps of benchmarks/training.py there (MLP, CNN+BN and ResNet-18, all
#      cores and 1).
# Each stage has a share of one deadline, so a slow stage cannot starve the rest, and every
# stage writes its results under $OUT as it goes. Run from the project root on the machine:
#   source .device/setup.sh && bash benchmarks/device_session.sh [SECONDS]
set -u
out=${OUT:-/tmp/out}
mkdir -p "$out"
budget=${1:-540}
start=$(date +%s)
left() { echo $(( start + budget - $(date +%s) )); }
stage() {  # stage NAME SECONDS_CAP COMMAND...: runs COMMAND under min(cap, time left - 5)
  local name=$1 cap=$2; shift 2
  local t; t=$(left); t=$(( t - 5 < cap ? t - 5 : cap ))
  if [ "$t" -le 10 ]; then echo "== $name: skipped, no time left"; return; fi
  echo "== $name (limit ${t}s) at +$(( $(date +%s) - start ))s"
  timeout -k 5 "$t" "$@"
  echo "== $name: exit $? at +$(( $(date +%s) - start ))s"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200
python3 -c "import torch, llvmlite, transformers; print('torch', torch.__version__, \
'llvmlite', llvmlite.__version__, 'transformers', transformers.__version__)"
stage "pytest -m gpu" 120 python3 -m pytest -q -m gpu -p no:cacheprovider -n 4 -rfEs \
  --junitxml="$out/pytest_gpu.xml" -k "not compute_sanitizer" test/unit
stage "benchmarks/gpu.py" 100 python3 benchmarks/gpu.py --iters 10 --json "$out/gpu.json"
stage "compute-sanitizer" 60 python3 -m pytest -q -m gpu -p no:cacheprovider -rfEs \
  -k compute_sanitizer test/unit/test_nvgpu.py
# ResNet-50 and ResNet-18 against onnxruntime in one process, taking turns (issue 26's bar;
# frozen weights, and the blocked layout, unmeasured on AVX-512 so far): all cores and 1
# thread on an AVX-512 machine.
stage "interleaved zoo" 160 python3 benchmarks/interleaved.py --models resnet50 resnet18 \
  --threads "$(nproc)" 1 --rounds 9 --variants eager accel_frozen accel_nchwc onnxruntime \
  --json "$out/interleaved.json"
# inductor last: its compiles took the whole stage on the 16-core machine (2026-11-27), so
# accel and onnxruntime never ran.
stage "cpu benchmarks" 150 python3 benchmarks/run.py --quick \
  --frameworks torch onnxruntime accel inductor --threads "$(nproc)" 1 \
  --workloads matmul_1024 conv2d_3x3 mlp_b64 attention resnet18 \
  --worker-timeout 90 --json "$out/cpu.json"
# Per conv layer of ResNet-18 and the whole model, all cores and 1 (what scales and what
# does not: the session-15 findings came from this).
stage "conv scaling" 100 python3 benchmarks/conv_scaling.py --threads "$(nproc)" 1 \
  --seconds 0.3 --json "$out/conv_scaling.json"
# One run per thread count, so a timeout loses one JSON, not both (ResNet-18's step
# compiles in ~45 s there).
stage "training, all cores" 90 python3 benchmarks/training.py --models mlp cnn resnet18 \
  --frameworks eager accel --threads "$(nproc)" --seconds 0.5 --json "$out/training.json"
stage "training, 1 thread" 90 python3 benchmarks/training.py --models mlp cnn resnet18 \
  --frameworks eager accel --threads 1 --seconds 0.5 --json "$out/training1.json"
echo "== done at +$(( $(date +%s) - start ))s"
