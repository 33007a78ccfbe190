# shellcheck shell=bash
# gpu-run.sh's samples stage: real traces for samples/ and tests/data. Profiled steps of the LSTM
# small and ResNet-50 (batch 32), step 3 of each (after cuDNN/cuBLAS warm-up; the pinned staging
# buffers give cuda_host_bfc records), gzipped; then PyTorch's own profiler traces and CUDA memory
# snapshot of a few training steps (scripts/gpu/torch_fixtures.py). The two-tower step comes from
# the virtual stage.

stage_samples() {
  local status=0 name flags trace
  mkdir -p "$keep/ours" "$keep/torch"
  for run in "lstm_small:$(model_flags lstm_small)" \
             "resnet50_b32:$( ((has_gpu)) && echo "--model resnet50 --image_size 224 --batch_size 32" ||
                              model_flags resnet50)"; do
    name=${run%%:*} flags=${run#*:}
    # shellcheck disable=SC2086
    bounded "$train" $flags --devices "$dev" --steps 4 --profile --profile_steps 3 \
      --profile_dir "$stage_dir/$name" > "$stage_dir/$name.txt" 2>&1 ||
      { echo "$name failed: $(tail -3 "$stage_dir/$name.txt")"; status=1; continue; }
    trace=$(ls "$stage_dir/$name"/*.pb | head -1)
    bounded "$cli" summary "$trace" > "$stage_dir/${name}_summary.txt" || status=1
    if ((has_gpu)) && ! grep -aq cuda_host_bfc "$trace"; then
      echo "$name: no cuda_host_bfc record in $trace"; status=1
    fi
    gzip -9c "$trace" > "$keep/ours/${gpu_tag}_${name}_step3.pb.gz"
  done
  if [[ -n ${STEPSCOPE_GPU_RUN_NO_TORCH:-} ]]; then
    echo "PyTorch fixtures: left out (STEPSCOPE_GPU_RUN_NO_TORCH)"
  elif ! LD_LIBRARY_PATH=$callers_library_path python3 -c 'import torch' 2>/dev/null; then
    echo "PyTorch fixtures: no torch on this machine"
  else
    LD_LIBRARY_PATH=$callers_library_path bounded python3 scripts/gpu/torch_fixtures.py \
      --out "$keep/torch" $( ((has_gpu)) || echo "--device cpu --tiny") ||
      { echo "torch_fixtures.py failed"; status=1; }
  fi
  ls -l "$keep/ours" "$keep/torch"
  return $status
}
