#!/usr/bin/env bash
# The one prepared run for a GPU machine lent for minutes: every stage in order, under one
# deadline, with the results packed after every stage so that a run stopped at any point still
# returns all that was done (docs/gpu.md, "Prepared runs"):
#
#   scripts/gpu/gpu-run.sh [--out DIR] [--deadline S] [--only STAGE,...] [--rehearse]
#   scripts/gpu/gpu-run.sh --make-references      (the committed CPU losses the smoke compares)
#
# Stages, in order (scripts/gpu/stages/<stage>.sh):
#   smoke      nvidia-smi; LSTM small and medium and ResNet-50 (batch 32) on gpu:0 with seed 7:
#              their first losses against the CPU's, committed in scripts/gpu/cpu-reference/
#   overhead   the profiling cost decomposed: plain runs and one run per --profile_level
#              (host, attached, activity, launches, all, launches+stay, launches+hw), every
#              second step profiled, interleaved; only when the trainer has that flag
#   virtual    stage_vgpu of scripts/gpu/stages/vgpu.sh: one tower against two virtual GPUs on
#              the one GPU (--virtual_gpus_per_gpu), a profiled two-tower step (kept as a
#              sample); only when the trainer has that flag and that file defines the function
#   mpi        stage_mpi of scripts/gpu/stages/mpi.sh, when that file defines it
#   samples    profiled LSTM small and ResNet-50 steps (cuda_host_bfc records), the two-tower
#              step, and PyTorch's own traces and memory snapshot (scripts/gpu/torch_fixtures.py)
#   bench      plain and profiled runs interleaved, >= 200 timed steps a side per model, against
#              PyTorch in alternating rounds: docs/gpu-runs/<gpu>-<date>.txt
#   gputests   every ctest test labelled gpu or gpu-host
#
# Options:
#   --out DIR        where results go (default $OUT, the device tool's folder, else
#                    /tmp/stepscope-gpu-run-out)
#   --deadline S     nothing runs past S seconds after the start (default 540: a 600 s call with
#                    time to pack); a stage that does not fit in what is left is skipped, one
#                    still running at the deadline (or past its own cap) is stopped
#   --only LIST      these stages only (comma-separated), still in the order above
#   --rehearse       no GPU needed: every stage that can runs on CPU devices with small shapes
#                    and few steps, so that the whole script, its figures and its packing are
#                    exercised here; no figure of a rehearsal is a GPU figure
#
# Without a GPU (and without --rehearse) the GPU stages are skipped, each with a line saying so.
# The programs are the bundle's (scripts/gpu/bundle.sh), or STEPSCOPE_GPU_BUILD's build directory.
# Environment: STEPSCOPE_GPU_RUN_NO_TORCH=1 (leave PyTorch out), STEPSCOPE_GPU_RUN_ROUNDS (bench
# rounds, default 4 of 50 timed steps a side).
#
# DIR receives at most five files (a lent machine returns few): summary.txt (one line per
# stage), results.tar.gz (every log and figure), samples-ours.tar and samples-torch.tar (gzipped
# traces), and <gpu>-<date>.txt (the bench's figures, for docs/gpu-runs/). Each stays under
# 16 MiB: what would not fit is left out with a line in summary.txt.
# Exit: 0 when every stage that ran passed, 1 when one failed, 2 for bad usage or no programs.
set -uo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
script_start=$SECONDS

deadline=540
results=${OUT:-/tmp/stepscope-gpu-run-out}
only=""
rehearse=0
make_references=0
while (($#)); do
  case $1 in
    --out) results=${2:?--out needs a folder}; shift 2 ;;
    --deadline) deadline=${2:?--deadline needs seconds}; shift 2 ;;
    --only) only=${2:?--only needs stages}; shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    --make-references) make_references=1; shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ $deadline =~ ^[0-9]+$ ]] || { echo "gpu-run.sh: --deadline $deadline: expected seconds" >&2; exit 2; }
all_stages=(smoke overhead virtual mpi samples bench gputests)
if [[ -n $only ]]; then
  for s in ${only//,/ }; do
    [[ " ${all_stages[*]} " == *" $s "* ]] ||
      { echo "gpu-run.sh: --only: unknown stage '$s' (${all_stages[*]})" >&2; exit 2; }
  done
fi

source scripts/gpu/stages/binaries.sh
setup_binaries || exit 2
for f in scripts/gpu/stages/{models,smoke,overhead,virtual,samples,bench,gputests}.sh; do source "$f"; done
# The MPI stage is optional: its file defines stage_mpi where the bundle carries a launcher.
[[ -f scripts/gpu/stages/mpi.sh ]] && source scripts/gpu/stages/mpi.sh

if ((make_references)); then
  make_cpu_references scripts/gpu/cpu-reference
  exit $?
fi

mkdir -p "$results"
results=$(cd "$results" && pwd)
work=$(mktemp -d /tmp/stepscope-gpu-run.XXXXXX)
summary=$work/summary.txt
: > "$summary"
keep=$work/keep  # the samples to return: keep/ours, keep/torch (packed apart from the logs)
failed=0
pack_reserve=15  # seconds kept after the last stage for the final pack

gpu_count=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | grep -c . || true)
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if ((gpu_count > 0)); then
  has_gpu=1 dev=gpu:0
  # "NVIDIA H200" -> h200: the figures file's name.
  gpu_tag=$(echo "${gpu_name#NVIDIA }" | tr 'A-Z ' 'a-z-' | tr -cd 'a-z0-9-')
  ((rehearse)) && { echo "gpu-run.sh: a GPU is here; --rehearse ignored" >&2; rehearse=0; }
else
  has_gpu=0 dev=cpu gpu_tag=cpu-rehearsal
fi
run_date=$(date -u +%Y-%m-%d)
export has_gpu rehearse dev gpu_tag
# What check.sh's stages find (stages/mpi.sh is shared with it): the work folder, extra flags.
out=$work
extra_train_flags=()
((has_gpu)) || export STEPSCOPE_MPI_DEVICES=${STEPSCOPE_MPI_DEVICES:-cpu:1}
# A lent machine runs commands as root, where OpenMPI's mpirun refuses to start unless told.
((EUID == 0)) && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

note() { echo "$*" | tee -a "$summary"; }

# bounded COMMAND...: COMMAND, stopped at the running stage's end (exit 124 when stopped or when
# no time is left to start it).
bounded() {
  local left=$((stage_end - SECONDS)) status=0
  if ((left < 2)); then echo "out of time, not run: $*"; : > "$stage_dir/.deadline"; return 124; fi
  timeout -k 5 "$left" "$@" || status=$?  # (under the stage's set -e: status is kept, not fatal)
  # The stage may go on after a stopped command: the mark tells run_stage what happened.
  if ((status == 124 || status == 137)); then
    echo "stopped at the deadline: $*"; : > "$stage_dir/.deadline"
  fi
  return $status
}

# Packs what is done into the results folder: logs and figures, then the samples, each archive
# under the 16 MiB a lent machine returns per file. Written to .tmp names, then renamed, so that a
# run killed while packing leaves the previous pack whole.
pack() {
  # Raw .pb traces stay behind: their gzipped copies travel.
  local limit=$((15 << 20)) size
  tar -C "$work" --exclude='./keep' --exclude='*.pb' -czf \
    "$results/results.tar.gz.tmp" . 2>/dev/null
  size=$(stat -c %s "$results/results.tar.gz.tmp")
  if ((size > limit)); then
    tar -C "$work" --exclude='./keep' --exclude='*.pb' --exclude='*.gz' \
      -czf "$results/results.tar.gz.tmp" . 2>/dev/null
    grep -q '^pack: results' "$summary" ||
      note "pack: results.tar.gz over 15 MiB with its traces ($((size >> 20)) MiB): packed without *.gz"
  fi
  mv "$results/results.tar.gz.tmp" "$results/results.tar.gz"
  local part dir file
  for part in ours torch; do
    dir=$keep/$part
    [[ -d $dir ]] && [[ -n $(ls -A "$dir") ]] || continue
    # Largest first out until the archive fits.
    while size=$(du -cb "$dir"/* | tail -1 | cut -f1); ((size > limit)); do
      file=$(ls -S "$dir" | head -1)
      note "pack: samples-$part.tar over 15 MiB: left out $file ($(($(stat -c %s "$dir/$file") >> 10)) KiB)"
      mkdir -p "$keep/left-out" && mv "$dir/$file" "$keep/left-out/"
    done
    tar -C "$dir" -cf "$results/samples-$part.tar.tmp" . && mv "$results/samples-$part.tar.tmp" "$results/samples-$part.tar"
  done
  for file in "$work"/gpu-runs/*.txt; do
    [[ -e $file ]] && cp "$file" "$results/"
  done
  cp "$summary" "$results/summary.txt.tmp" && mv "$results/summary.txt.tmp" "$results/summary.txt"
}

# run_stage NAME NEEDS MIN_S CAP_S: stage_NAME with its output in <work>/NAME/log.txt and one
# line in the summary. NEEDS is gpu (skipped without a GPU unless rehearsing) or any; MIN_S the
# seconds it needs at least (skipped when less is left); CAP_S the most it may take, so that a
# stage that hangs leaves time to the ones after it. The stage runs in its own process group,
# stopped at its end if still running, and everything is packed after it.
run_stage() {
  local name=$1 needs=$2 min_s=$3 cap_s=$4 fn=stage_$1
  if [[ -n $only && ",$only," != *",$name,"* ]]; then return 0; fi
  if ! declare -F "$fn" >/dev/null; then
    note "$name: skipped: no $fn (scripts/gpu/stages/$name.sh is not in this checkout)"; pack; return 0
  fi
  if [[ $needs == gpu ]] && ((!has_gpu && !rehearse)); then
    note "$name: skipped: no GPU on this machine (nvidia-smi lists none)"; pack; return 0
  fi
  stage_end=$((script_start + deadline - pack_reserve))
  local left=$((stage_end - SECONDS))
  # A rehearsal on a CPU is slower than the GPU the caps are sized for: only its deadline holds.
  ((has_gpu && left > cap_s)) && stage_end=$((SECONDS + cap_s))
  if ((left < min_s)); then
    note "$name: skipped: ${left} s left before the deadline, it needs ${min_s} s"; pack; return 0
  fi
  stage_dir=$work/$name
  mkdir -p "$stage_dir"
  local start=$SECONDS status pid
  set -m  # the stage gets its own process group, so that a stop reaches all it started
  (set -e; "$fn") > "$stage_dir/log.txt" 2>&1 &
  pid=$! stage_pid=$!
  set +m
  while kill -0 "$pid" 2>/dev/null; do
    if ((SECONDS >= stage_end + 3)); then
      kill -TERM -- "-$pid" 2>/dev/null; sleep 3; kill -KILL -- "-$pid" 2>/dev/null
      break
    fi
    sleep 0.5
  done
  wait "$pid"
  status=$? stage_pid=
  if ((status == 0)); then
    note "$name: ok ($((SECONDS - start)) s)"
  elif [[ -e $stage_dir/.deadline ]] || ((SECONDS >= stage_end)); then
    note "$name: STOPPED at its time limit ($((SECONDS - start)) s; what it wrote is packed, see $name/log.txt)"
    failed=1
  elif ((status == 3)); then
    note "$name: skipped: $(tail -1 "$stage_dir/log.txt")"
  else
    note "$name: FAILED ($((SECONDS - start)) s, exit $status; see $name/log.txt)"
    failed=1
  fi
  pack
}

stage_pid=
trap '[[ -n $stage_pid ]] && kill -KILL -- "-$stage_pid" 2>/dev/null
      note "gpu-run.sh: stopped by a signal after $((SECONDS - script_start)) s"; pack; exit 1' TERM INT

note "gpu-run.sh: $( ((has_gpu)) && echo "$gpu_count GPU(s): $gpu_name" || echo "no GPU$( ((rehearse)) && echo ", rehearsal on CPU devices")" ), deadline ${deadline} s, $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"
"$train" --help > "$work/trainer-help.txt" 2>&1 ||
  { note "gpu-run.sh: $train --help failed"; cat "$work/trainer-help.txt" >&2; pack; exit 2; }

# Caps: estimated from the H100 run's step times, with room (the stages should take about 420 s
# in all when nothing hangs; the deadline, not the caps, bounds the whole).
run_stage smoke gpu 20 60
run_stage overhead gpu 40 150
run_stage virtual gpu 30 60
run_stage mpi gpu 30 60
run_stage samples gpu 30 90
run_stage bench gpu 60 300
run_stage gputests gpu 30 180
note "gpu-run.sh: done in $((SECONDS - script_start)) s"
pack
exit $failed
