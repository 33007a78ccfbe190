# shellcheck shell=bash
# gpu-run.sh's virtual stage: two towers on the one GPU as TensorFlow's logical devices
# (--virtual_gpus_per_gpu 2). The LSTM small's step with one tower against two (each tower the
# same batch: twice the work), then one profiled two-tower step whose lanes must sit under each
# tower's /device:GPU:k, kept as a sample.
# --devices gpu:0 --virtual_gpus_per_gpu 2: towers /device:GPU:0 and /device:GPU:1 on GPU 0.
virtual_devices=${STEPSCOPE_GPU_RUN_VIRTUAL_DEVICES:-gpu:0}

stage_virtual() {
  trainer_has virtual_gpus_per_gpu || skip_stage "this stepscope-train has no --virtual_gpus_per_gpu"
  ((has_gpu)) || skip_stage "virtual GPUs need a GPU; nothing to rehearse on CPU devices"
  local flags n status=0
  flags=$(model_flags lstm_small)
  n=$(steps 110 6)
  for round in 1 2; do
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices gpu:0 --steps "$n" --warmup_steps 10 \
      --metrics "$stage_dir/one_round$round.jsonl" > "$stage_dir/one_round$round.txt" 2>&1 || status=1
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices "$virtual_devices" --virtual_gpus_per_gpu 2 --steps "$n" \
      --warmup_steps 10 --metrics "$stage_dir/two_round$round.jsonl" \
      > "$stage_dir/two_round$round.txt" 2>&1 || status=1
  done
  # NCCL across virtual GPUs where the library allows several ranks per GPU; a clear refusal
  # otherwise (the log keeps which).
  # shellcheck disable=SC2086
  bounded "$train" $flags --devices "$virtual_devices" --virtual_gpus_per_gpu 2 \
    --allreduce_spec nccl --steps 6 > "$stage_dir/two_nccl.txt" 2>&1 ||
    echo "NCCL across virtual GPUs: refused or failed (two_nccl.txt): $(tail -2 "$stage_dir/two_nccl.txt")"
  # shellcheck disable=SC2086
  bounded "$train" $flags --devices "$virtual_devices" --virtual_gpus_per_gpu 2 --steps 4 \
    --profile --profile_steps 3 --profile_dir "$stage_dir/trace" > "$stage_dir/two_profiled.txt" 2>&1 ||
    status=1
  local trace
  trace=$(ls "$stage_dir"/trace/*.pb 2>/dev/null | head -1)
  if [[ -n $trace ]]; then
    bounded "$cli" streams "$trace" | tee "$stage_dir/streams.txt"
    # Both towers' lanes must be there.
    for k in 0 1; do
      grep -q "/device:GPU:$k/stream" "$stage_dir/streams.txt" ||
        { echo "no lane of /device:GPU:$k in the two-tower trace"; status=1; }
    done
    mkdir -p "$work/samples/ours"
    gzip -9c "$trace" > "$work/samples/ours/${gpu_tag}_lstm_small_two_virtual_towers_step3.pb.gz"
  else
    echo "no two-tower trace written"; status=1
  fi
  bounded python3 scripts/gpu/figures.py virtual "$stage_dir" | tee "$stage_dir/figures.txt"
  return $status
}
