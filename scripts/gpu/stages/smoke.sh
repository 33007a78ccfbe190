# shellcheck shell=bash
# gpu-run.sh's first stage: the GPU is there and trains as the CPU does. The first losses of each
# run on gpu:0 against the CPU's with the same seed and flags, committed in
# scripts/gpu/cpu-reference/ (make_cpu_references wrote them), so the GPU machine runs no CPU
# training.

# name : steps : flags (seed 7; ResNet-50 at learning rate 0.001, where the two devices' losses
# stay together: docs/gpu.md)
smoke_runs=("lstm_small:20:--model lstm --config small"
            "lstm_medium:20:--model lstm --config medium"
            "resnet50_b32_lr0.001:3:--model resnet50 --image_size 224 --batch_size 32 --learning_rate 0.001")

# make_cpu_references DIR: the CPU runs, their losses only.
make_cpu_references() {
  local dir=$1 run name n flags tmp
  tmp=$(mktemp)
  for run in "${smoke_runs[@]}"; do
    IFS=: read -r name n flags <<< "$run"
    # shellcheck disable=SC2086
    "$train" $flags --devices cpu --steps "$n" --seed 7 --metrics "$tmp" > /dev/null || return 1
    python3 scripts/gpu/figures.py losses "$tmp" > "$dir/$name.jsonl" || return 1
    echo "$dir/$name.jsonl: $n steps"
  done
  rm -f "$tmp"
}

stage_smoke() {
  nvidia-smi || ((!has_gpu))
  ldd "$train" | grep 'not found' && return 1
  local run name n flags status=0
  for run in "${smoke_runs[@]}"; do
    IFS=: read -r name n flags <<< "$run"
    # The rehearsal runs the same flags on the CPU, a few steps of the LSTM small only.
    if ((!has_gpu)); then [[ $name == lstm_small ]] || continue; n=3; fi
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices "$dev" --steps "$n" --seed 7 \
      --metrics "$stage_dir/$name.jsonl" > "$stage_dir/$name.txt" 2>&1 ||
      { echo "$name failed: $(tail -3 "$stage_dir/$name.txt")"; status=1; continue; }
  done
  bounded python3 scripts/gpu/figures.py smoke scripts/gpu/cpu-reference "$stage_dir" || status=1
  return $status
}
