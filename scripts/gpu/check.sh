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
#   profile   profiled GPU steps of the LSTM small and ResNet-50, then stepscope's summary,
#             kernels, streams, overlap and critical-path on them and the Chrome export
#   bench     step times of ours and PyTorch's on the GPU, in alternating rounds
# Each stage writes <stage>/ in a work folder and a line to the summary; the script goes on after
# a failing stage and exits 1 if any failed. OUT_DIR gets two files (few files travel back from a
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

# The bundle: unpacked once into the build directory it was made from, reachable at the source
# directory compiled into the tests (a link when this checkout lives elsewhere).
bundle=${STEPSCOPE_GPU_BUNDLE:-gpu-bundle}
manifest_value() { sed -n "s/^$1 //p" "$bundle/manifest.txt"; }
[[ -f $bundle/stepscope-gpu.tar.xz ]] || { echo "no $bundle/stepscope-gpu.tar.xz: run scripts/gpu/bundle.sh where the project builds, and carry $bundle" >&2; exit 2; }
source_dir=$(manifest_value source_dir)
build=$(manifest_value build_dir)
if [[ ! -f $build/manifest.txt ]] || ! cmp -s "$build/manifest.txt" "$bundle/manifest.txt"; then
  mkdir -p "$build"
  xz -dc "$bundle/stepscope-gpu.tar.xz" | tar -C "$build" -xf -
fi
if [[ $source_dir != "$repo" && ! -e $source_dir ]]; then
  mkdir -p "$(dirname "$source_dir")" && ln -s "$repo" "$source_dir"
fi

# CUDA's big libraries come from this machine: the toolkit, or the pip wheels PyTorch brings.
cuda_dirs=()
for pattern in libcublasLt.so.13 libnccl.so.2 libcuda.so.1; do
  found=$( { ls -d /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/*/lib /usr/local/nvidia/lib64 \
               /usr/lib/x86_64-linux-gnu 2>/dev/null
             python3 -c 'import nvidia, os; [print(os.path.join(p, d, "lib")) for p in nvidia.__path__ for d in os.listdir(p)]' 2>/dev/null
           } | while read -r d; do [[ -e $d/$pattern ]] && { echo "$d"; break; }; done)
  [[ -n $found ]] && cuda_dirs+=("$found")
done
lib_path=$repo/$build/lib
for d in "${cuda_dirs[@]}"; do lib_path+=":$d"; done
export LD_LIBRARY_PATH=$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
bin=$repo/$build
train=$bin/trainer/main/stepscope-train
cli=$bin/profiler/cli/stepscope

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
  cat "$bundle/manifest.txt"
  echo "missing libraries:"
  ldd "$train" "$bin/tests/kernels/kernels_cuda_test" | grep 'not found' || echo "  none"
  "$train" --help | head -5
}

stage_tests() {
  ctest --test-dir "$build" -L '^gpu' --output-on-failure -j4 --timeout 600 \
    --output-junit "$out/tests/gpu-tests.xml"
}

stage_all_tests() {
  ctest --test-dir "$build" --output-on-failure -j8 --timeout 600 \
    --output-junit "$out/all-tests/all-tests.xml"
}

# Losses of the first 20 steps, GPU against CPU with the same seed.
stage_train() {
  local dir=$out/train status=0
  local runs=("lstm_small:--model lstm --config small"
              "lstm_medium:--model lstm --config medium"
              "resnet50:--model resnet50 --image_size 224 --batch_size 32")
  for run in "${runs[@]}"; do
    local name=${run%%:*} flags=${run#*:}
    for device in gpu:0 cpu; do
      local tag=${name}_${device%%:*}
      # shellcheck disable=SC2086
      "$train" $flags --devices "$device" --steps 20 --seed 7 --metrics "$dir/$tag.jsonl" \
        "${extra_train_flags[@]}" > "$dir/$tag.txt" 2>&1 || { echo "$tag failed"; status=1; }
    done
  done
  python3 - "$dir" <<'EOF' | tee "$dir/compare.txt"
import json, sys, os
d = sys.argv[1]
for name in ("lstm_small", "lstm_medium", "resnet50"):
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
    for i, (a, b) in enumerate(zip(g, c)):
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
  "$train" --model lstm --config small --devices gpu:0 --steps 6 --profile --profile_dir "$dir" \
    "${extra_train_flags[@]}" || status=1
  "$train" --model resnet50 --image_size 224 --batch_size 32 --devices gpu:0 --steps 6 \
    --profile --profile_dir "$dir" "${extra_train_flags[@]}" || status=1
  for trace in "$dir"/*.pb; do
    [[ -e $trace ]] || { echo "no trace written"; return 1; }
    for command in summary kernels streams overlap critical-path; do
      echo "== stepscope $command $(basename "$trace")"
      "$cli" "$command" "$trace" || status=1
    done
    "$cli" convert "$trace" "${trace%.pb}.json.gz" || status=1
    gzip -k9 "$trace"
  done
  return $status
}

stage_bench() {
  python3 scripts/bench/torch_step_time.py --device cuda --steps 20 --warmup 5 \
    > "$out/bench/torch.json"
  local name flags
  for run in "lstm_small:--model lstm --config small" "lstm_medium:--model lstm --config medium" \
             "resnet50:--model resnet50 --image_size 224 --batch_size 64"; do
    name=${run%%:*} flags=${run#*:}
    # shellcheck disable=SC2086
    "$train" $flags --devices gpu:0 --steps 30 --warmup_steps 10 \
      --metrics "$out/bench/${name}_ours.jsonl" > "$out/bench/${name}_ours.txt" 2>&1 || return 1
  done
}

for stage in "${stages[@]}"; do
  case $stage in
    env|tests|train|profile|bench) run_stage "$stage" "stage_$stage" ;;
    all-tests) run_stage all-tests stage_all_tests ;;
    *) echo "unknown stage '$stage' (env tests all-tests train profile bench)" >&2; exit 2 ;;
  esac
done
# Traces travel gzipped; their Chrome exports and the raw .pb stay behind.
tar -C "$out" --exclude='*.json.gz' --exclude='*.pb' -czf "$results/results.tar.gz.tmp" . &&
  mv "$results/results.tar.gz.tmp" "$results/results.tar.gz"
cp "$summary" "$results/summary.txt"
cat "$summary"
exit $failed
