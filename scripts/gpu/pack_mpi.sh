#!/usr/bin/env bash
# Packs the OpenMPI runtime that `mpirun -np N` on one machine needs into DEST/mpi, for a GPU
# machine that has no MPI (scripts/gpu/bundle.sh calls it; docs/gpu.md):
#
#   scripts/gpu/pack_mpi.sh DEST
#
# DEST/mpi/mpirun is the launcher: it points OpenMPI and PMIx at the packed tree (OPAL_PREFIX,
# PMIX_PREFIX), puts its libraries first on LD_LIBRARY_PATH (the ranks inherit both, so
# their libmpi loads the packed components too) and runs orterun, allowing root (lent machines
# run as root) and more ranks than cores. The tree mirrors the installed one under its prefix
# (/usr), which is how OPAL_PREFIX relocates it: bin/ (orterun, orted), the MCA components,
# PMIx's, and the help texts. Components that need network fabrics (UCX, OFI, verbs, PSM) or
# OpenSHMEM are left out: one machine's ranks talk through shared memory (btl vader).
# Needs OpenMPI installed here (Debian/Ubuntu: apt-get install -y openmpi-bin).
set -euo pipefail
dest=${1:?usage: scripts/gpu/pack_mpi.sh DEST}
orterun=$(command -v orterun || true)
[[ -n $orterun ]] || { echo "pack_mpi: no orterun here (apt-get install -y openmpi-bin)" >&2; exit 2; }
prefix=$(ompi_info --path prefix --parsable | sed -n 's/^path:prefix://p')
libdir=$(ompi_info --path libdir --parsable | sed -n 's/^path:libdir://p')
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
pkgdatadir=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
[[ -n $prefix && $libdir == "$prefix"/* && $pkglibdir == "$prefix"/* ]] ||
  { echo "pack_mpi: OpenMPI's directories are not under its prefix '$prefix'" >&2; exit 1; }
mpi=$dest/mpi
rm -rf "$mpi"
mkdir -p "$mpi/bin" "$mpi/lib" "$mpi${pkglibdir#"$prefix"}" "$mpi${pkgdatadir#"$prefix"}"
cp -L "$orterun" "$mpi/bin/orterun"
cp -L "$(dirname "$orterun")/orted" "$mpi/bin/orted"
cp -rL "$pkgdatadir/." "$mpi${pkgdatadir#"$prefix"}/"

# Libraries a packed file loads, except the C runtime (the target's) and CUDA's.
system='^(libc|libm|libdl|librt|libpthread|libutil|ld-linux-x86-64|linux-vdso|libcuda|libcudart|libnvidia)\.so'
unwanted='^(libucp|libucs|libuct|libucm|libfabric|libibverbs|librdmacm|libpsm|libpsm2|libinfinipath|libefa|liboshmem|libnl-|libjvm)'
pack_libraries() {  # FILE...: copy what they load into $mpi/lib
  local file name path
  for file in "$@"; do
    while read -r name _ path _; do
      [[ -z ${path:-} || $path != /* || $name =~ $system ]] && continue
      [[ -e $mpi/lib/$name ]] || cp -L "$path" "$mpi/lib/$name"
    done < <(ldd "$file" 2>/dev/null)
  done
}
needs_unwanted() {  # FILE: whether it loads a fabric's or OpenSHMEM's library
  ldd "$1" 2>/dev/null | awk '{print $1}' | grep -qE "$unwanted"
}
pack_libraries "$mpi/bin/orterun" "$mpi/bin/orted" "$libdir"/libmpi.so
# The ranks' own libmpi (the trainer loads it by its soname).
cp -L "$libdir"/libmpi.so "$mpi/lib/$(objdump -p "$libdir"/libmpi.so | awk '$1 == "SONAME" {print $2}')"
# MCA components whose libraries stay within what one machine needs.
kept=0 skipped=0
for component in "$pkglibdir"/*.so; do
  if ! needs_unwanted "$component"; then
    pack_libraries "$component"
    cp -L "$component" "$mpi${pkglibdir#"$prefix"}/"
    kept=$((kept + 1))
  else
    skipped=$((skipped + 1))
  fi
done
# An external PMIx (Debian's OpenMPI 4) has its own prefix and components.
pmix_lib=$( (ldd "$libdir"/libopen-pal.so "$pkglibdir"/*.so 2>/dev/null || true) |
  awk '$1 ~ /^libpmix\.so/ {print $3}' | sort -u | sed -n 1p)
pmix_env=
if [[ -n $pmix_lib ]]; then
  pmix_prefix=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
  mkdir -p "$mpi/pmix/lib"
  [[ -d $pmix_prefix/lib/pmix ]] && cp -rL "$pmix_prefix/lib/pmix" "$mpi/pmix/lib/"
  [[ -d $pmix_prefix/share ]] && cp -rL "$pmix_prefix/share" "$mpi/pmix/"
  pack_libraries "$mpi"/pmix/lib/pmix/*.so 2>/dev/null || true
  pmix_env='export PMIX_PREFIX=$mpi/pmix PMIX_MCA_mca_base_component_path=$mpi/pmix/lib/pmix'
fi
strip --strip-unneeded "$mpi"/bin/* "$mpi"/lib/*.so* 2>/dev/null || true

cat > "$mpi/mpirun" <<LAUNCHER
#!/bin/sh
# OpenMPI's mpirun from this packed tree (scripts/gpu/pack_mpi.sh).
mpi=\$(cd "\$(dirname "\$0")" && pwd)
export OPAL_PREFIX=\$mpi
$pmix_env
export LD_LIBRARY_PATH=\$mpi/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export PATH=\$mpi/bin:\$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
# The fabrics' components are not packed: no warning for their absence.
export OMPI_MCA_mca_base_component_show_load_errors=0
exec "\$mpi/bin/orterun" "\$@"
LAUNCHER
chmod +x "$mpi/mpirun"
echo "pack_mpi: $mpi: OpenMPI $(ompi_info --parsable | sed -n 's/^ompi:version:full://p'), $kept components ($skipped left out), $(ls "$mpi/lib" | wc -l) libraries, $(du -sh "$mpi" | cut -f1)"
