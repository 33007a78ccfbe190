# shellcheck shell=bash
# The `mpi` stage of scripts/gpu/check.sh: two MPI ranks on the one GPU, profiled, with a host
# all-reduce (GPU gradients staged through host memory, reduced over MPI's shared-memory window).
# Sourced by check.sh, which provides: $train (stepscope-train), $cli (stepscope), $bin (the
# unpacked bundle's build tree), $out (the work folder), bounded, extra_train_flags.
#
#   stage_mpi     run 2 ranks (`mpirun -np 2`, CUDA_VISIBLE_DEVICES=0 so both drive GPU 0 as
#                 their gpu:0), 6 steps profiled, then `stepscope stragglers` and `merge` on
#                 the traces, and checks each rank's kernels are on its own lanes: in rank r's
#                 trace every GPU stream lane belongs to /job:worker/replica:0/task:r/device:GPU:0
#                 and there is at least one. Writes $out/mpi/ (traces, stragglers.txt,
#                 merged.json.gz, lanes.txt). Returns non-zero on any failure.
#
# mpirun: the bundle's ($bin/mpi/mpirun, packed by scripts/gpu/pack_mpi.sh), else one on PATH.
# STEPSCOPE_MPI_DEVICES (default gpu:0) runs the same on other devices, e.g. cpu:1 on a machine
# without a GPU (the lane check then has no GPU lane to look at and is skipped).
stage_mpi() {
  local dir=$out/mpi mpirun=$bin/mpi/mpirun status=0 rank trace
  local devices=${STEPSCOPE_MPI_DEVICES:-gpu:0}
  mkdir -p "$dir"
  [[ -x $mpirun ]] || mpirun=$(command -v mpirun || true)
  [[ -n $mpirun ]] || { echo "no mpirun: the bundle has none and this machine neither"; return 1; }
  echo "mpirun: $mpirun"
  bounded "$mpirun" -np 2 -x CUDA_VISIBLE_DEVICES=0 -x LD_LIBRARY_PATH \
    "$train" --model lstm --config small --devices "$devices" --allreduce_spec ring --steps 6 \
    --profile --profile_every 2 --profile_dir "$dir" "${extra_train_flags[@]}" || return 1
  bounded "$cli" stragglers "$dir" > "$dir/stragglers.txt" || status=1
  cat "$dir/stragglers.txt"
  bounded "$cli" merge "$dir" -o "$dir/merged.json.gz" || status=1
  for rank in 0 1; do
    trace=$(ls "$dir"/*_rank"$rank"*.pb 2>/dev/null | head -1 || true)
    [[ -n $trace ]] || { echo "no trace of rank $rank"; status=1; continue; }
    [[ $devices == gpu:* ]] || continue
    bounded "$cli" streams --json "$trace" | python3 -c '
import json, sys
rank = sys.argv[1]
lanes = [s for s in json.load(sys.stdin)["streams"] if s["lane"].startswith("stream:")]
own = "/job:worker/replica:0/task:%s" % rank
wrong = [s["device"] + " " + s["lane"] for s in lanes
         if own not in s["device"] or not s["device"].endswith("GPU:0")]
print("rank %s: %d GPU stream lanes, %d not its own %s" % (rank, len(lanes), len(wrong), wrong))
sys.exit(0 if lanes and not wrong else 1)' "$rank" | tee -a "$dir/lanes.txt" || status=1
  done
  for trace in "$dir"/*.pb; do [[ -e $trace ]] && gzip -k9 "$trace"; done
  return $status
}
