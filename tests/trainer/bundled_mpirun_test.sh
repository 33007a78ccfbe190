#!/usr/bin/env bash
# The GPU bundle's OpenMPI launcher on this machine's CPU: scripts/gpu/pack_mpi.sh packs it into a
# scratch folder, and scripts/gpu/stages/mpi.sh (check.sh's `mpi` stage) runs through it, with
# --devices cpu:1: two ranks train profiled, each writes its traces, and `stepscope stragglers`
# and `merge` read them.
#
#   bundled_mpirun_test.sh STEPSCOPE_TRAIN STEPSCOPE
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
train=${1:?usage: bundled_mpirun_test.sh STEPSCOPE_TRAIN STEPSCOPE}
cli=${2:?usage: bundled_mpirun_test.sh STEPSCOPE_TRAIN STEPSCOPE}
scratch=$(mktemp -d /tmp/stepscope-mpirun-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

"$here/scripts/gpu/pack_mpi.sh" "$scratch" || fail "pack_mpi.sh"
[[ -x $scratch/mpi/mpirun && -x $scratch/mpi/bin/orterun ]] || fail "no packed mpirun"
# The stage's environment, as check.sh gives it.
bin=$scratch out=$scratch/out
extra_train_flags=(--batch_size 4 --warmup_steps 1)
bounded() { timeout -k 10 600 "$@"; }
# shellcheck source=../../scripts/gpu/stages/mpi.sh
source "$here/scripts/gpu/stages/mpi.sh"
mkdir -p "$out"
STEPSCOPE_MPI_DEVICES=cpu:1 stage_mpi > "$scratch/stage.log" 2>&1
status=$?
cat "$scratch/stage.log"
((status == 0)) || fail "stage_mpi exit $status"
grep -q "mpirun: $scratch/mpi/mpirun" "$scratch/stage.log" || fail "the stage did not take the packed mpirun"
for rank in 0 1; do
  ls "$out"/mpi/*_rank"$rank".pb > /dev/null 2>&1 || fail "no trace of rank $rank"
done
grep -q "finished" "$out/mpi/stragglers.txt" || fail "stragglers named no rank"
[[ -s $out/mpi/merged.json.gz ]] || fail "merge wrote nothing"
echo "PASSED"
