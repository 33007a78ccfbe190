# shellcheck shell=bash
# gpu-run.sh's overhead stage: where the profiler's cost comes from. Per model (the LSTM small by
# default: a step of launches, where the cost shows most) a plain run and one run per
# --profile_level, every second step profiled, the runs interleaved over two rounds; figures.py
# overhead turns them into, per level, µs per GPU operation of the profiled steps, the unprofiled
# steps against plain (the detach's cost: goal within ±2 %), API records and links per GPU op,
# drops and the API calls recorded most. The figures are remade after each round, so a stage
# stopped in the second keeps the first's.
#
# Environment: STEPSCOPE_GPU_RUN_OVERHEAD_MODELS (default "lstm_small"; "lstm_small resnet50"
# when there is time: a ResNet-50 step at 224/64 is ~120 ms).

overhead_levels=(host attached activity launches all launches+stay launches+hw)

stage_overhead() {
  trainer_has profile_level || skip_stage "this stepscope-train has no --profile_level"
  local round level model flags dir warmup=10 n status failed=0
  # 100 timed steps a run on a GPU: 50 profiled and 50 not, 100 of each over the two rounds.
  n=$(steps 110 8)
  ((has_gpu)) || warmup=2
  for round in 1 2; do
    for model in ${STEPSCOPE_GPU_RUN_OVERHEAD_MODELS:-lstm_small}; do
      flags=$(model_flags "$model")
      [[ -n $flags ]] || { echo "unknown model '$model' in STEPSCOPE_GPU_RUN_OVERHEAD_MODELS"; return 2; }
      dir=$stage_dir/$model
      mkdir -p "$dir"
      echo "round $round, $model: plain"
      # shellcheck disable=SC2086
      bounded "$train" $flags --devices "$dev" --steps "$n" --warmup_steps "$warmup" \
        --metrics "$dir/plain_round$round.jsonl" > "$dir/plain_round$round.txt" 2>&1
      for level in "${overhead_levels[@]}"; do
        echo "round $round, $model: --profile_level $level"
        # A level that fails (its log says why) leaves the others to run; the deadline does not.
        status=0
        # shellcheck disable=SC2086
        bounded "$train" $flags --devices "$dev" --steps "$n" --warmup_steps "$warmup" \
          --profile --profile_every 2 --profile_level "$level" --profile_dir "$dir/traces" \
          --metrics "$dir/${level}_round$round.jsonl" > "$dir/${level}_round$round.txt" 2>&1 ||
          status=$?
        ((status == 124)) && return 124
        ((status == 0)) || { echo "  FAILED (exit $status): see $model/${level}_round$round.txt"; failed=1; }
        rm -rf "$dir/traces"  # every second step's trace: the log's lines are what counts here
      done
      bounded python3 scripts/gpu/figures.py overhead "$dir" --model "$model" --warmup "$warmup" \
        --every 2 --levels "${overhead_levels[*]}" > "$stage_dir/figures_$model.txt"
    done
    cat "$stage_dir"/figures_*.txt > "$stage_dir/figures.txt"
  done
  cat "$stage_dir/figures.txt"
  return $failed
}
