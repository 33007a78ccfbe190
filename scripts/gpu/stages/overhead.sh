# shellcheck shell=bash
# gpu-run.sh's overhead stage: where the profiler's cost comes from. The LSTM small (a step of
# launches, where the cost shows most) run plain and at each --profile_level, every step profiled,
# the runs interleaved over two rounds of 60 timed steps; figures.py overhead turns it into µs per
# GPU operation for each level, after each round (a stopped stage keeps the first round's).

overhead_levels=(host attached activity launches all)

stage_overhead() {
  trainer_has profile_level || skip_stage "this stepscope-train has no --profile_level"
  local round level flags warmup=10 n
  flags=$(model_flags lstm_small)
  n=$(steps 70 6)
  ((has_gpu)) || warmup=2
  for round in 1 2; do
    echo "round $round: plain"
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices "$dev" --steps "$n" --warmup_steps "$warmup" \
      --metrics "$stage_dir/plain_round$round.jsonl" > "$stage_dir/plain_round$round.txt" 2>&1
    for level in "${overhead_levels[@]}"; do
      echo "round $round: --profile_level $level"
      # shellcheck disable=SC2086
      bounded "$train" $flags --devices "$dev" --steps "$n" --warmup_steps "$warmup" \
        --profile --profile_every 1 --profile_level "$level" --profile_dir "$stage_dir/traces" \
        --metrics "$stage_dir/${level}_round$round.jsonl" > "$stage_dir/${level}_round$round.txt" 2>&1
      rm -rf "$stage_dir/traces"  # every step's trace: the log's lines are what counts here
    done
    bounded python3 scripts/gpu/figures.py overhead "$stage_dir" --warmup "$warmup" \
      --levels "${overhead_levels[*]}" > "$stage_dir/figures.txt"
  done
  cat "$stage_dir/figures.txt"
}
