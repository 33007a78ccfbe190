# shellcheck shell=bash
# gpu-run.sh's virtual stage: two towers on the one GPU as TensorFlow's logical devices
# (--virtual_gpus_per_gpu 2). The work is stage_vgpu of scripts/gpu/stages/vgpu.sh (shared with
# check.sh: one tower against two, interleaved; a profiled two-tower step whose lanes must be
# GPU:0's and GPU:1's apart; NCCL across the two or its refusal); this stage adds its profiled
# two-tower step to the samples.
[[ -f scripts/gpu/stages/vgpu.sh ]] && source scripts/gpu/stages/vgpu.sh

stage_virtual() {
  trainer_has virtual_gpus_per_gpu || skip_stage "this stepscope-train has no --virtual_gpus_per_gpu"
  declare -F stage_vgpu > /dev/null ||
    skip_stage "no stage_vgpu (scripts/gpu/stages/vgpu.sh is not in this checkout)"
  ((has_gpu)) || skip_stage "virtual GPUs need a GPU; nothing to rehearse on CPU devices"
  local status=0 trace
  stage_vgpu || status=$?
  trace=$(ls "$out"/vgpu/profile/*.pb 2>/dev/null | head -1 || true)
  if [[ -n $trace ]]; then
    mkdir -p "$keep/ours"
    gzip -9c "$trace" > "$keep/ours/${gpu_tag}_lstm_small_two_virtual_towers_$(basename "$trace").gz"
  fi
  return $status
}
