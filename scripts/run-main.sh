#!/usr/bin/env bash
# The main job on a fresh Debian machine, on built-in defaults: install what is missing, build,
# then turn the bundled TensorFlow step trace into a Perfetto-ready Chrome trace and print its
# summary. (When the trainer lands this becomes: train briefly with --profile, then summarize.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release --target stepscope
bin=build/release/profiler/cli/stepscope
mkdir -p traces
"$bin" convert samples/ptb_lstm_tf1_gpu_step.pbtxt traces/ptb_lstm_tf1_gpu_step.json.gz
"$bin" summary samples/ptb_lstm_tf1_gpu_step.pbtxt
echo
echo "Open traces/ptb_lstm_tf1_gpu_step.json.gz in https://ui.perfetto.dev (or chrome://tracing)."
