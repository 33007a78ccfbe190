#!/usr/bin/env bash
# The GPU bundle's OpenMPI launcher on this machine's CPU: scripts/gpu/pack_mpi.sh packs it into a
# scratch folder, and scripts/gpu/stages/mpi.sh (check.sh's `mpi` stage) runs through it, with
# --devices cpu:1: two ranks train profiled, each writes its traces, and `stepscope stragglers`
# and `merge` read them. Where a private mount namespace is allowed (root), the installed
# OpenMPI and PMIx are hidden first (empty mounts over their folders, orted and orterun), as on a
# machine without MPI, so only the packed files can serve.
#
#   bundled_mpirun_test.sh STEPSCOPE_TRAIN STEPSCOPE
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
train=${1:?usage: bundled_mpirun_test.sh STEPSCOPE_TRAIN STEPSCOPE}
cli=${2:?usage: bundled_mpirun_test.sh STEPSCOPE_TRAIN STEPSCOPE}
fail() { echo "FAILED: $*"; exit 1; }

# Inside the namespace: hide the installed MPI, then run the stage.
if [[ ${STEPSCOPE_HIDE_MPI:-} ]]; then
  for path in $STEPSCOPE_HIDE_MPI; do
    if [[ -d $path ]]; then mount -t tmpfs none "$path"; else mount --bind /dev/null "$path"; fi ||
      fail "could not hide $path"
  done
  echo "hidden: $STEPSCOPE_HIDE_MPI"
fi
if [[ ${STEPSCOPE_MPI_SCRATCH:-} ]]; then
  scratch=$STEPSCOPE_MPI_SCRATCH
  # The stage's environment, as check.sh gives it.
  bin=$scratch out=$scratch/out
  extra_train_flags=(--batch_size 4 --warmup_steps 1)
  bounded() { timeout -k 10 600 "$@"; }
  # shellcheck source=../../scripts/gpu/stages/mpi.sh
  source "$here/scripts/gpu/stages/mpi.sh"
  mkdir -p "$out"
  STEPSCOPE_MPI_DEVICES=cpu:1 stage_mpi
  exit $?
fi

scratch=$(mktemp -d /tmp/stepscope-mpirun-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
"$here/scripts/gpu/pack_mpi.sh" "$scratch" || fail "pack_mpi.sh"
[[ -x $scratch/mpi/mpirun && -x $scratch/mpi/bin/orterun ]] || fail "no packed mpirun"
hide=
if unshare -m true 2> /dev/null; then
  path_of() { ompi_info --path "$1" --parsable | sed -n "s/^path:$1://p"; }
  hide="$(dirname "$(path_of libdir)") $(path_of pkgdatadir) $(command -v orted) $(command -v orterun)"
  # An external PMIx with a prefix of its own (Debian: .../pmix2) goes too.
  pmix_lib=$(ldconfig -p | awk '/libpmix\.so/ {print $NF}' | sed -n 1p)
  if [[ -n $pmix_lib ]]; then
    pmix=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
    [[ $pmix == */pmix* ]] && hide+=" $pmix"
  fi
  STEPSCOPE_MPI_SCRATCH=$scratch STEPSCOPE_HIDE_MPI=$hide \
    unshare -m bash "$0" "$train" "$cli" > "$scratch/stage.log" 2>&1
else
  echo "no private mount namespace here: the installed OpenMPI stays visible"
  STEPSCOPE_MPI_SCRATCH=$scratch bash "$0" "$train" "$cli" > "$scratch/stage.log" 2>&1
fi
status=$?
cat "$scratch/stage.log"
((status == 0)) || fail "stage_mpi exit $status"
out=$scratch/out
grep -q "mpirun: $scratch/mpi/mpirun" "$scratch/stage.log" || fail "the stage did not take the packed mpirun"
for rank in 0 1; do
  ls "$out"/mpi/*_rank"$rank".pb > /dev/null 2>&1 || fail "no trace of rank $rank"
done
grep -q "finished" "$out/mpi/stragglers.txt" || fail "stragglers named no rank"
[[ -s $out/mpi/merged.json.gz ]] || fail "merge wrote nothing"
echo "PASSED"
