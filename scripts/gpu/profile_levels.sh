#!/usr/bin/env bash
# The profiler's cost taken apart on a GPU (docs/gpu.md "What profiling costs"): per model, runs
# without --profile and with each --profile_level, every second step profiled, in alternating
# rounds, then scripts/gpu/profile_levels.py makes the table (µs per GPU op per level, unprofiled
# steps against plain, API records per GPU op, links, the API histogram).
#
#   scripts/gpu/profile_levels.sh TRAIN_BINARY OUT_DIR
#
# Environment: PROFILE_LEVELS_STEPS (steps per run, default 220: 100 profiled, 100 not, after
# 20 of warm-up), PROFILE_LEVELS_ROUNDS (default 1), PROFILE_LEVELS_MODELS (default
# "lstm_small"; add resnet50 when there is time: a ResNet-50 step is ~120 ms),
# PROFILE_LEVELS_LIST (default "host attached activity launches all launches+stay launches+hw").
# The caller (check.sh) sets the library path and any time limit around it.
set -uo pipefail
train=${1:?usage: profile_levels.sh TRAIN_BINARY OUT_DIR}
out=${2:?usage: profile_levels.sh TRAIN_BINARY OUT_DIR}
steps=${PROFILE_LEVELS_STEPS:-220}
rounds=${PROFILE_LEVELS_ROUNDS:-1}
models=${PROFILE_LEVELS_MODELS:-lstm_small}
levels=${PROFILE_LEVELS_LIST:-host attached activity launches all launches+stay launches+hw}
mkdir -p "$out"
status=0
for model in $models; do
  case $model in
    lstm_small) flags="--model lstm --config small" ;;
    lstm_medium) flags="--model lstm --config medium" ;;
    resnet50) flags="--model resnet50 --image_size 224 --batch_size 64" ;;
    *) echo "unknown model $model" >&2; exit 2 ;;
  esac
  for round in $(seq 1 "$rounds"); do
    # shellcheck disable=SC2086
    "$train" $flags --devices gpu:0 --steps "$steps" --warmup_steps 20 \
      --metrics "$out/${model}_plain_r$round.jsonl" > "$out/${model}_plain_r$round.txt" 2>&1 ||
      status=1
    for level in $levels; do
      # shellcheck disable=SC2086
      "$train" $flags --devices gpu:0 --steps "$steps" --warmup_steps 20 --profile \
        --profile_every 2 --profile_level "$level" --profile_dir "$out/traces_${model}_$level" \
        --metrics "$out/${model}_${level}_r$round.jsonl" > "$out/${model}_${level}_r$round.txt" 2>&1 ||
        status=1
      # The traces were read for their log lines; a few are enough to keep.
      find "$out/traces_${model}_$level" -name '*.pb' 2>/dev/null | sort | tail -n +3 | xargs -r rm -f
    done
  done
done
python3 "$(dirname "$0")/profile_levels.py" "$out" | tee "$out/profile_levels.txt" || status=1
exit $status
