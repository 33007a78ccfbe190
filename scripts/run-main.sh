#!/usr/bin/env bash
# The main job on a fresh Debian machine, on built-in defaults: install what is missing, build,
# train the PTB word LSTM (small config, built-in corpus) briefly on one CPU device with
# --profile, turn the profiled step into a Perfetto-ready Chrome trace and print its summary.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release --target stepscope-train stepscope
train=build/release/trainer/main/stepscope-train
stepscope=build/release/profiler/cli/stepscope
mkdir -p traces
"$train" --model lstm --config small --steps 6 --profile --profile_dir traces \
  --metrics traces/lstm_small_metrics.jsonl
trace=traces/lstm_small_step3.pb   # the first step after the 2 warm-up steps
"$stepscope" convert "$trace" traces/lstm_small_step3.json.gz
"$stepscope" summary "$trace"
echo
echo "Trace: $trace (RunMetadata); open traces/lstm_small_step3.json.gz in https://ui.perfetto.dev"
