#!/usr/bin/env bash
# The main job on a fresh Debian machine, on built-in defaults: install what is missing, build
# (the trainer, the CLI and, when Qt6 is found, the desktop viewer), train the PTB word LSTM
# (small config, built-in corpus) briefly on one CPU device with --profile, turn the profiled
# step into a Perfetto-ready Chrome trace, print its summary and the commands that open it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/configure.sh release
targets=(stepscope-train stepscope)
# The viewer is configured only when Qt6 Widgets is found (cmake/StepscopeDependencies.cmake).
viewer_built=false
if grep -qx 'STEPSCOPE_VIEWER:BOOL=ON' build/release/CMakeCache.txt; then
  targets+=(stepscope-view)
  viewer_built=true
fi
cmake --build --preset release --target "${targets[@]}"
train=build/release/trainer/main/stepscope-train
stepscope=build/release/profiler/cli/stepscope
viewer=build/release/viewer/stepscope-view
mkdir -p traces
"$train" --model lstm --config small --steps 6 --profile --profile_dir traces \
  --metrics traces/lstm_small_metrics.jsonl
trace=traces/lstm_small_step3.pb   # the first step after the 2 warm-up steps
"$stepscope" convert "$trace" traces/lstm_small_step3.json.gz
"$stepscope" summary "$trace"
echo
echo "Trace: $trace (RunMetadata)"
if $viewer_built; then
  echo "Open it in the desktop viewer:  $viewer $trace"
else
  echo "The desktop viewer was not built (no Qt6 Widgets: install qt6-base-dev, then run this again)"
fi
echo "Or open traces/lstm_small_step3.json.gz in https://ui.perfetto.dev"
