# shellcheck shell=bash
# gpu-run.sh's last stage: every ctest test labelled gpu or gpu-host (kernels against the CPU's,
# GPU devices, NCCL, CUPTI), as check.sh's tests stage. A rehearsal only lists them.

stage_gputests() {
  if ((!has_gpu)); then
    ctest --test-dir "$build" -N -L '^gpu' | tail -3
    return 0
  fi
  bounded ctest --test-dir "$build" -L '^gpu' -j4 --timeout 300 --output-on-failure \
    --output-junit "$stage_dir/gpu-tests.xml"
}
