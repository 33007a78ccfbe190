# shellcheck shell=bash
# gpu-run.sh's bench stage: the figures of docs/gpu-runs/<gpu>-<date>.txt. For each model, rounds
# alternate PyTorch's step (scripts/bench/torch_step_time.py, same shapes), our plain run and our
# profiled run (every step profiled), 50 timed steps a side per round after 5 warm-up steps, 4
# rounds (>= 200 steps a side); then one --profile --profile_every 4 run of 200 steps, whose
# unprofiled steps must be as fast as plain ones. figures.py runs computes medians, bootstrap
# 95 % intervals and ratios.
bench_models=(lstm_small lstm_medium resnet50)

stage_bench() {
  local rounds timed warmup=5 round model flags
  rounds=${STEPSCOPE_GPU_RUN_ROUNDS:-$(steps 4 1)}
  timed=$(steps 50 3)
  ((has_gpu)) || warmup=1
  local torch=1
  if [[ -n ${STEPSCOPE_GPU_RUN_NO_TORCH:-} ]]; then
    torch=0; echo "PyTorch: left out (STEPSCOPE_GPU_RUN_NO_TORCH)"
  elif ! LD_LIBRARY_PATH=$callers_library_path python3 -c 'import torch' 2>/dev/null; then
    torch=0; echo "PyTorch: no torch on this machine; no step_over_pytorch figure"
  fi
  for ((round = 1; round <= rounds; round++)); do
    if ((torch)); then
      # shellcheck disable=SC2046
      LD_LIBRARY_PATH=$callers_library_path bounded python3 scripts/bench/torch_step_time.py \
        $(torch_shape_flags) --models "$(IFS=,; echo "${bench_models[*]}")" \
        --steps "$((timed < 10 ? 10 : timed))" --warmup "$warmup" \
        --times "$stage_dir/torch_round$round.json" > "$stage_dir/torch_round$round.txt" 2>&1 ||
        echo "PyTorch round $round failed: $(tail -2 "$stage_dir/torch_round$round.txt")"
    fi
    for model in "${bench_models[@]}"; do
      flags=$(model_flags "$model")
      # shellcheck disable=SC2086
      bounded "$train" $flags --devices "$dev" --steps "$((timed + warmup))" --warmup_steps "$warmup" \
        --metrics "$stage_dir/${model}_plain_round$round.jsonl" \
        > "$stage_dir/${model}_plain_round$round.txt" 2>&1
      # shellcheck disable=SC2086
      bounded "$train" $flags --devices "$dev" --steps "$((timed + warmup))" --warmup_steps "$warmup" \
        --profile --profile_every 1 --profile_dir "$stage_dir/traces" \
        --metrics "$stage_dir/${model}_profiled_round$round.jsonl" \
        > "$stage_dir/${model}_profiled_round$round.txt" 2>&1
      # One trace per model stays (sizes per step); the rest were counted in the log.
      [[ -e $stage_dir/${model}_trace.pb ]] ||
        mv "$(ls "$stage_dir"/traces/*.pb | tail -1)" "$stage_dir/${model}_trace.pb"
      rm -rf "$stage_dir/traces"
    done
    # Figures and a pack after every round: a bench stopped by the deadline, or a call killed,
    # still returns those of the rounds it finished.
    bench_figures > /dev/null || echo "figures after round $round failed"
    pack || true
  done
  for model in "${bench_models[@]}"; do
    flags=$(model_flags "$model")
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices "$dev" --steps "$(steps 204 8)" --warmup_steps 4 \
      --profile --profile_every 4 --profile_dir "$stage_dir/traces" \
      --metrics "$stage_dir/${model}_every4.jsonl" > "$stage_dir/${model}_every4.txt" 2>&1
    rm -rf "$stage_dir/traces"
  done
  bench_figures
}

bench_figures() {
  mkdir -p "$work/gpu-runs"
  # shellcheck disable=SC2046
  bounded python3 scripts/gpu/figures.py runs "$stage_dir" --warmup "$warmup" --gpu "$gpu_tag" \
    --date "$run_date" $( ((has_gpu)) || echo --rehearsal) \
    --out "$work/gpu-runs/$gpu_tag-$run_date.txt"
}
