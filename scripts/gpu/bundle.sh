#!/usr/bin/env bash
# Builds what a GPU machine runs and packs it for a machine that has the NVIDIA driver and CUDA's
# libraries but none of our other dependencies (protobuf, OpenBLAS, OpenMPI, simdjson, ...):
#
#   scripts/gpu/bundle.sh [BUNDLE_DIR]        (default: gpu-bundle, which git ignores)
#
# - A Release build with CUDA for one architecture (STEPSCOPE_GPU_ARCH, default 90: H100/H200),
#   warnings as errors, no viewer, in build/gpu.
# - BUNDLE_DIR/stepscope-gpu.tar.xz: the programs, every test and benchmark program with the
#   CTest files that list them (the build tree minus objects, so `ctest --test-dir build/gpu`
#   runs there), and lib/ with each shared library they load that a CUDA machine may lack.
#   Left out: the C library and loader (the target's own), the driver (libcuda), and cuBLAS,
#   cuBLASLt and NCCL (hundreds of MB; a CUDA machine has them: scripts/gpu/check.sh finds them).
#   mpi/: OpenMPI's mpirun and runtime for one machine's ranks (scripts/gpu/pack_mpi.sh, about
#   2.5 MiB packed): `build/gpu/mpi/mpirun -np 2 ...` there.
# - BUNDLE_DIR/manifest.txt: the build's source directory (tests have it compiled in), the CUDA
#   version, the libraries packed and the ones expected on the target.
#
# Fails when the packed bundle is over 60 MiB (the working tree travels with it, 64 MiB in all).
# Then on the GPU machine, from the repository root: scripts/gpu/check.sh OUT_DIR (docs/gpu.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bundle=${1:-gpu-bundle}
arch=${STEPSCOPE_GPU_ARCH:-90}
build=build/gpu
limit_bytes=$((60 << 20))

scripts/install-deps.sh
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTEPSCOPE_CUDA=ON \
  -DSTEPSCOPE_CUDA_ARCHITECTURES="$arch" -DSTEPSCOPE_VIEWER=OFF -DSTEPSCOPE_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Executables and CTest files at their places in the build tree.
(cd "$build" && find . -type f \( -name CTestTestfile.cmake -o -perm -u+x \) \
   ! -path '*/CMakeFiles/*' ! -name '*.so*' ! -name '*.sh' -print0 |
   xargs -0 -I{} cp --parents {} "$stage/")
mkdir -p "$stage/lib"
find "$stage" -type f -perm -u+x ! -path "$stage/lib/*" -print0 |
  xargs -0 strip --strip-unneeded 2>/dev/null || true

# Shared libraries the programs load, resolved here; those a CUDA machine has are named, not
# packed. The C runtime stays the target's: it is as new as ours or newer (docs/gpu.md).
expected='^(libcuda|libcublas|libcublasLt|libnccl)\.so'
system='^(libc|libm|libdl|librt|libpthread|libutil|ld-linux-x86-64|linux-vdso)\.so'
declare -A packed=() wanted=()
while IFS= read -r exe; do
  while read -r name _ path _; do
    [[ -z "${path:-}" || "$path" != /* ]] && continue
    if [[ $name =~ $system ]]; then continue; fi
    if [[ $name =~ $expected ]]; then wanted[$name]=1; continue; fi
    if [[ -z "${packed[$name]:-}" ]]; then
      cp -L "$path" "$stage/lib/$name"
      packed[$name]=1
    fi
  done < <(ldd "$exe" 2>/dev/null || true)
done < <(find "$stage" -type f -perm -u+x ! -path "$stage/lib/*")
strip --strip-unneeded "$stage"/lib/*.so* 2>/dev/null || true
# OpenMPI's launcher and runtime (mpi/mpirun), for MPI runs on a machine without MPI.
scripts/gpu/pack_mpi.sh "$stage"

mkdir -p "$bundle"
{
  echo "source_dir $root"
  echo "build_dir $build"
  echo "cuda_architectures $arch"
  echo "cuda $(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) from $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')"
  echo "packed ${!packed[*]}"
  echo "expected_on_target ${!wanted[*]}"
  echo "mpi $(ompi_info --parsable | sed -n 's/^ompi:version:full://p') mpi/mpirun"
} > "$bundle/manifest.txt"
cp "$bundle/manifest.txt" "$stage/manifest.txt"
tar -C "$stage" -cf - . | xz -T0 -6 > "$bundle/stepscope-gpu.tar.xz.tmp"
mv "$bundle/stepscope-gpu.tar.xz.tmp" "$bundle/stepscope-gpu.tar.xz"
size=$(stat -c %s "$bundle/stepscope-gpu.tar.xz")
echo "bundle: $bundle/stepscope-gpu.tar.xz, $((size >> 20)) MiB, $(find "$stage" -type f -perm -u+x ! -path "$stage/lib/*" | wc -l) programs, ${#packed[@]} libraries"
if ((size > limit_bytes)); then
  echo "bundle: over $((limit_bytes >> 20)) MiB; it would not travel with the working tree" >&2
  exit 1
fi
