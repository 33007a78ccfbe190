# shellcheck shell=bash
# The `vgpu` stage of scripts/gpu/check.sh: two towers on virtual GPUs of GPU 0 against one tower.
# Sourced by check.sh, which provides: $train, $cli, $out, bounded, extra_train_flags.
#
#   stage_vgpu    1. LSTM small, `--devices gpu:0` and `--devices gpu:0 --virtual_gpus_per_gpu 2`
#                    (ring, host-staged), 40 steps each, twice, interleaved: median step times
#                    and their ratio in $out/vgpu/step_times.txt (`two_virtual_over_one <ratio>`;
#                    the two-tower run does twice the examples per step);
#                 2. one profiled run of the two virtual towers: each tower's kernels on its own
#                    /device:GPU:0 and /device:GPU:1 stream lanes (lanes.txt);
#                 3. `--allreduce_spec nccl` on the two virtual towers: trains where the loaded
#                    NCCL allows several ranks per GPU, else the clear refusal (exit 2) is logged.
stage_vgpu() {
  local dir=$out/vgpu status=0 round towers
  mkdir -p "$dir"
  for round in 1 2; do
    for towers in 1 2; do
      local flags=(--devices gpu:0)
      ((towers == 2)) && flags+=(--virtual_gpus_per_gpu 2)
      bounded "$train" --model lstm --config small "${flags[@]}" --allreduce_spec ring --steps 40 \
        --warmup_steps 5 --metrics "$dir/towers${towers}_round$round.jsonl" \
        "${extra_train_flags[@]}" > "$dir/towers${towers}_round$round.txt" 2>&1 || status=1
    done
  done
  python3 - "$dir" <<'PY' | tee "$dir/step_times.txt" || status=1
import glob, json, os, statistics, sys
d = sys.argv[1]
def steps(towers):
    out = []
    for path in sorted(glob.glob(os.path.join(d, f"towers{towers}_round*.jsonl"))):
        out += [l["step_time_ms"] for l in map(json.loads, filter(str.strip, open(path)))
                if "step_time_ms" in l and l.get("step", 0) > 5]
    return out
one, two = steps(1), steps(2)
if one and two:
    print(f"one tower        median {statistics.median(one):.3f} ms over {len(one)} steps")
    print(f"two virtual      median {statistics.median(two):.3f} ms over {len(two)} steps")
    print(f"two_virtual_over_one {statistics.median(two) / statistics.median(one):.3f}")
else:
    print("no step times"); sys.exit(1)
PY
  bounded "$train" --model lstm --config small --devices gpu:0 --virtual_gpus_per_gpu 2 \
    --allreduce_spec ring --steps 4 --profile --profile_dir "$dir/profile" \
    "${extra_train_flags[@]}" > "$dir/profile.txt" 2>&1 || status=1
  local trace
  trace=$(ls "$dir"/profile/*.pb 2>/dev/null | head -1 || true)
  if [[ -n $trace ]]; then
    bounded "$cli" streams --json "$trace" | python3 -c '
import json, sys
lanes = [s for s in json.load(sys.stdin)["streams"] if s["lane"].startswith("stream:")]
per = {k: [s["lane"] for s in lanes if s["device"].endswith("GPU:%d" % k)] for k in (0, 1)}
other = [s["device"] for s in lanes if not s["device"].endswith(("GPU:0", "GPU:1"))]
print("GPU:0 lanes %s, GPU:1 lanes %s, elsewhere %s" % (per[0], per[1], other))
shared = set(per[0]) & set(per[1])
sys.exit(0 if per[0] and per[1] and not other and not shared else 1)' | tee "$dir/lanes.txt" ||
      status=1
    gzip -k9 "$trace"
  else
    echo "no profiled trace"; status=1
  fi
  local nccl=0
  bounded "$train" --model lstm --config small --devices gpu:0 --virtual_gpus_per_gpu 2 \
    --allreduce_spec nccl --steps 4 > "$dir/nccl.txt" 2>&1 || nccl=$?
  echo "nccl on two virtual GPUs: exit $nccl"; tail -3 "$dir/nccl.txt"
  ((nccl == 0 || nccl == 2)) || status=1
  return $status
}
