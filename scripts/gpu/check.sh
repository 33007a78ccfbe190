#!/usr/bin/env bash
# Runs the GPU checks on a machine with an NVIDIA GPU, from the bundle scripts/gpu/bundle.sh made
# (docs/gpu.md), writing logs, figures and traces under OUT_DIR:
#
#   scripts/gpu/check.sh OUT_DIR [STAGE...] [-- EXTRA_TRAIN_FLAGS...]
#
# Stages (default: env tests train profile):
#   env       nvidia-smi, the driver and CUDA libraries found, the bundle's manifest
#   tests     every ctest test labelled gpu or gpu-host (kernels against the CPU, GPU devices,
#             NCCL, CUPTI), then the whole suite with `all-tests`
#   all-tests the whole ctest suite of the bundle, on the GPU machine
#   train     the LSTM (small, medium) and ResNet-50 on gpu:0 and on the CPU with one seed: the
#             first 20 steps' losses side by side (train/compare.txt)
#   profile   profiled GPU steps of the LSTM (small, medium) and ResNet-50, then stepscope's summary,
#             kernels, streams, overlap and critical-path on them and the Chrome export
#   nccl      the trainer with --allreduce_spec nccl on every GPU of the machine, profiled
#   bench     step times of ours and PyTorch's on the GPU, in alternating rounds; profiling
#             overhead (every second step profiled); CUPTI records and trace size per step
#   cpu-reference  only the CPU half of `train`, into OUT_DIR/cpu-reference/ (run it on any
#             machine, then STEPSCOPE_CHECK_CPU_REFERENCE=that folder spares the GPU machine it)
#
# Time limits (a lent machine has minutes): every command a stage runs stops after
# STEPSCOPE_CHECK_COMMAND_S seconds (default 900), and with STEPSCOPE_CHECK_DEADLINE_S set,
# nothing runs past that many seconds after the start: what ran still comes back.
# Each stage writes <stage>/ in a work folder and a line to the summary; the script goes on after
# a failing stage and exits 1 if any failed. STEPSCOPE_GPU_BUILD=DIR runs the programs of that
# build directory instead of the bundle's. OUT_DIR gets two files (few files travel back from a
# lent machine): summary.txt, and results.tar.gz with every log, figure and gzipped trace.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
out=${1:?usage: scripts/gpu/check.sh OUT_DIR [STAGE...] [-- EXTRA_TRAIN_FLAGS...]}
shift
stages=()
while (($#)) && [[ $1 != -- ]]; do stages+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
extra_train_flags=("$@")
((${#stages[@]})) || stages=(env tests train profile)
mkdir -p "$out"
results=$(cd "$out" && pwd)
out=$(mktemp -d /tmp/stepscope-check.XXXXXX)
summary=$out/summary.txt
: > "$summary"
failed=0
deadline=${STEPSCOPE_CHECK_DEADLINE_S:-0}
cpu_reference=${STEPSCOPE_CHECK_CPU_REFERENCE:-}
[[ -z $cpu_reference ]] || cpu_reference=$(cd "$cpu_reference" && pwd) ||
  { echo "STEPSCOPE_CHECK_CPU_REFERENCE: no folder $STEPSCOPE_CHECK_CPU_REFERENCE" >&2; exit 2; }

# bounded COMMAND...: COMMAND under the time limits above (exit 124 when stopped or skipped).
bounded() {
  local limit=${STEPSCOPE_CHECK_COMMAND_S:-900}
  if ((deadline > 0)); then
    local left=$((deadline - SECONDS))
    if ((left < 5)); then echo "skipped, out of time: $*"; return 124; fi
    ((left < limit)) && limit=$left
  fi
  timeout -k 10 "$limit" "$@"
}

# The programs (the bundle's, or STEPSCOPE_GPU_BUILD's) and the CUDA libraries they load.
source scripts/gpu/stages/binaries.sh
setup_binaries || exit 2

# run_stage NAME COMMAND...: output to OUT_DIR/NAME/log.txt, one line in the summary.
run_stage() {
  local name=$1; shift
  mkdir -p "$out/$name"
  local start=$SECONDS status
  # A stage stops at its first failing command unless that command says otherwise (|| ...).
  (set -e; "$@") > "$out/$name/log.txt" 2>&1
  status=$?
  if ((status == 0)); then
    echo "$name: ok ($((SECONDS - start)) s)" | tee -a "$summary"
  else
    echo "$name: FAILED ($((SECONDS - start)) s, exit $status; see $name/log.txt)" | tee -a "$summary"
    failed=1
  fi
}

stage_env() {
  nvidia-smi
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  cat "${STEPSCOPE_GPU_BUNDLE:-gpu-bundle}/manifest.txt" 2>/dev/null || echo "no bundle: the programs of $build"
  echo "missing libraries:"
  ldd "$train" "$bin/tests/kernels/kernels_cuda_test" | grep 'not found' || echo "  none"
  "$train" --help | head -5
}

stage_tests() {
  bounded ctest --test-dir "$build" -L '^gpu' -V -j4 --timeout 600 \
    --output-junit "$out/tests/gpu-tests.xml"
}

stage_all_tests() {
  bounded ctest --test-dir "$build" --output-on-failure -j8 --timeout 600 \
    --output-junit "$out/all-tests/all-tests.xml"
}

# The trainer runs `train` compares: name, GPU steps, flags. The GPU runs go past the 20 steps
# compared so that a leak shows in the allocator's level. ResNet-50 at its default learning rate
# starts unstable on the built-in images (the loss climbs to ~10 before it falls), where rounding
# differences grow by orders of magnitude a step; at 0.001 the two devices' losses stay together.
train_runs=("lstm_small:200:--model lstm --config small"
            "lstm_medium:200:--model lstm --config medium"
            "resnet50:60:--model resnet50 --image_size 224 --batch_size 32"
            "resnet50_lr0.001:20:--model resnet50 --image_size 224 --batch_size 32 --learning_rate 0.001")

# train_run NAME DEVICE DIR [STEPS]: STEPS (default 20) steps of run NAME on DEVICE, metrics in
# DIR.
train_run() {
  local name=$1 device=$2 dir=$3 steps=${4:-20} run flags
  for run in "${train_runs[@]}"; do [[ ${run%%:*} == "$name" ]] && flags=${run#*:*:}; done
  local tag=${name}_${device%%:*}
  # shellcheck disable=SC2086
  bounded "$train" $flags --devices "$device" --steps "$steps" --seed 7 --metrics "$dir/$tag.jsonl" \
    "${extra_train_flags[@]}" > "$dir/$tag.txt" 2>&1 || { echo "$tag failed"; return 1; }
}

stage_cpu_reference() {
  local status=0 run
  mkdir -p "$results/cpu-reference"
  for run in "${train_runs[@]}"; do
    train_run "${run%%:*}" cpu "$results/cpu-reference" || status=1
  done
  return $status
}

# Losses of the first 20 steps, GPU against CPU with the same seed (the CPU's from
# STEPSCOPE_CHECK_CPU_REFERENCE when it has them), and the GPU allocator's level over the run.
stage_train() {
  local dir=$out/train status=0 run name gpu_steps
  for run in "${train_runs[@]}"; do
    name=${run%%:*} gpu_steps=${run#*:} gpu_steps=${gpu_steps%%:*}
    train_run "$name" gpu:0 "$dir" "$gpu_steps" || status=1
    if [[ -n $cpu_reference && -f $cpu_reference/${name}_cpu.jsonl ]]; then
      cp "$cpu_reference/${name}_cpu.jsonl" "$dir/"
      echo "$name: CPU losses from $cpu_reference"
    else
      train_run "$name" cpu "$dir" || status=1
    fi
  done
  python3 - "$dir" <<'EOF' | tee "$dir/compare.txt"
import json, sys, os
d = sys.argv[1]
names = sorted({f[:-len("_gpu.jsonl")] for f in os.listdir(d)
                if f.endswith(("_gpu.jsonl", "_cpu.jsonl"))})
for name in names:
    def losses(device):
        path = os.path.join(d, f"{name}_{device}.jsonl")
        if not os.path.exists(path): return []
        return [json.loads(l)["loss"] for l in open(path) if '"step"' in l and '"loss"' in l]
    g, c = losses("gpu"), losses("cpu")
    print(f"{name}: {len(g)} GPU steps, {len(c)} CPU steps")
    path = os.path.join(d, f"{name}_gpu.jsonl")
    levels = [json.loads(l)["device_bytes_in_use"] for l in open(path)
              if '"device_bytes_in_use"' in l] if os.path.exists(path) else []
    if levels:
        print(f"  GPU allocator bytes in use: after step 1 {levels[0]}, after step {len(levels)} "
              f"{levels[-1]} ({'steady' if levels[1:] and levels[-1] == levels[1] else 'CHANGED'})")
    worst = 0.0
    for i, (a, b) in enumerate(zip(g[:20], c[:20])):
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst = max(worst, rel)
        print(f"  step {i + 1:2d}  gpu {a:.6f}  cpu {b:.6f}  rel {rel:.2e}")
    print(f"  worst relative difference {worst:.2e}")
EOF
  return $status
}

# Profiled GPU steps, and every analysis on them.
stage_profile() {
  local dir=$out/profile status=0
  bounded "$train" --model lstm --config small --devices gpu:0 --steps 6 --profile \
    --profile_dir "$dir" "${extra_train_flags[@]}" || status=1
  bounded "$train" --model lstm --config medium --devices gpu:0 --steps 6 --profile \
    --profile_dir "$dir" "${extra_train_flags[@]}" || status=1
  bounded "$train" --model resnet50 --image_size 224 --batch_size 32 --devices gpu:0 --steps 6 \
    --profile --profile_dir "$dir" "${extra_train_flags[@]}" || status=1
  for trace in "$dir"/*.pb; do
    [[ -e $trace ]] || { echo "no trace written"; return 1; }
    for command in summary kernels streams overlap critical-path; do
      echo "== stepscope $command $(basename "$trace")"
      bounded "$cli" "$command" "$trace" || status=1
    done
    bounded "$cli" convert "$trace" "${trace%.pb}.json.gz" || status=1
    gzip -k9 "$trace"
  done
  return $status
}

# NCCL through the trainer on every GPU of this machine (--devices gpu:0,...,N-1). With one GPU
# the clique has one rank and the towers have nothing to reduce (one tower), so NCCL's kernels
# run only where there are two GPUs or more; with one the run must still train and profile.
stage_nccl() {
  local dir=$out/nccl trace gpus
  gpus=$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd, -)
  bounded "$train" --model lstm --config small --devices "gpu:$gpus" --allreduce_spec nccl \
    --steps 6 --profile --profile_dir "$dir" "${extra_train_flags[@]}"
  for trace in "$dir"/*.pb; do
    bounded "$cli" kernels "$trace" --top 200 > "$dir/kernels.txt"
    if [[ $gpus == *,* ]]; then
      grep -i 'nccl' "$dir/kernels.txt" | grep -v '^trace' ||
        { echo "no NCCL kernel in $trace"; return 1; }
    fi
  done
}

# Step times in alternating rounds (PyTorch, then ours), then the profiling overhead: one run
# per model with every second step profiled. scripts/gpu/figures.py makes the table.
stage_bench() {
  local dir=$out/bench status=0 round run name flags
  local runs=("lstm_small:--model lstm --config small" "lstm_medium:--model lstm --config medium"
              "resnet50:--model resnet50 --image_size 224 --batch_size 64 --num_classes 1000")
  for round in 1 2; do
    LD_LIBRARY_PATH=$callers_library_path \
      bounded python3 scripts/bench/torch_step_time.py --device cuda --steps 20 --warmup 5 \
      > "$dir/torch_round$round.json" || status=1
    for run in "${runs[@]}"; do
      name=${run%%:*} flags=${run#*:}
      # shellcheck disable=SC2086
      bounded "$train" $flags --devices gpu:0 --steps 25 --warmup_steps 5 \
        --metrics "$dir/${name}_ours_round$round.jsonl" > "$dir/${name}_ours_round$round.txt" 2>&1 ||
        status=1
    done
  done
  for run in "${runs[0]}" "${runs[2]}"; do
    name=${run%%:*} flags=${run#*:}
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices gpu:0 --steps 24 --warmup_steps 4 --profile --profile_every 2 \
      --profile_dir "$dir/overhead_$name" --metrics "$dir/${name}_overhead.jsonl" \
      > "$dir/${name}_overhead.txt" 2>&1 || status=1
  done
  python3 scripts/gpu/figures.py "$dir" | tee "$dir/figures.txt"
  return $status
}

for stage in "${stages[@]}"; do
  case $stage in
    env|tests|train|profile|nccl|bench) run_stage "$stage" "stage_$stage" ;;
    all-tests) run_stage all-tests stage_all_tests ;;
    cpu-reference) run_stage cpu-reference stage_cpu_reference ;;
    *) echo "unknown stage '$stage' (env tests all-tests train profile nccl bench cpu-reference)" >&2
       exit 2 ;;
  esac
done
# Traces travel gzipped; their Chrome exports and the raw .pb stay behind.
tar -C "$out" --exclude='*.json.gz' --exclude='*.pb' -czf "$results/results.tar.gz.tmp" . &&
  mv "$results/results.tar.gz.tmp" "$results/results.tar.gz"
cp "$summary" "$results/summary.txt"
cat "$summary"
exit $failed
