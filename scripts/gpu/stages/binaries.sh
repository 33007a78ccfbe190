# shellcheck shell=bash
# Sourced by scripts/gpu/check.sh and scripts/gpu/gpu-run.sh: finds the programs to run and the
# CUDA libraries they load. Sets build, bin, train, cli, callers_library_path and exports
# LD_LIBRARY_PATH.
#
# With STEPSCOPE_GPU_BUILD=DIR the programs of that build directory run as they are (a build made
# on this machine: rehearsals without a GPU, tests). Otherwise the bundle scripts/gpu/bundle.sh made
# (STEPSCOPE_GPU_BUNDLE, default gpu-bundle) is unpacked once into the build directory it was
# made from, reachable at the source directory compiled into the tests (a link when this
# checkout lives elsewhere).
setup_binaries() {
  if [[ -n ${STEPSCOPE_GPU_BUILD:-} ]]; then
    build=$STEPSCOPE_GPU_BUILD
    [[ -x $build/trainer/main/stepscope-train ]] ||
      { echo "STEPSCOPE_GPU_BUILD=$build: no trainer/main/stepscope-train there" >&2; return 2; }
  else
    local bundle=${STEPSCOPE_GPU_BUNDLE:-gpu-bundle} source_dir
    [[ -f $bundle/stepscope-gpu.tar.xz ]] || {
      echo "no $bundle/stepscope-gpu.tar.xz: run scripts/gpu/bundle.sh where the project builds," \
           "and carry $bundle (or set STEPSCOPE_GPU_BUILD to a build directory)" >&2
      return 2
    }
    source_dir=$(sed -n 's/^source_dir //p' "$bundle/manifest.txt")
    build=$(sed -n 's/^build_dir //p' "$bundle/manifest.txt")
    if [[ ! -f $build/manifest.txt ]] || ! cmp -s "$build/manifest.txt" "$bundle/manifest.txt"; then
      mkdir -p "$build"
      xz -dc "$bundle/stepscope-gpu.tar.xz" | tar -C "$build" -xf - || return 2
    fi
    if [[ $source_dir != "$repo" && ! -e $source_dir ]]; then
      mkdir -p "$(dirname "$source_dir")" && ln -s "$repo" "$source_dir"
    fi
  fi

  # CUDA's big libraries come from this machine: the toolkit, or the pip wheels PyTorch brings.
  local cuda_dirs=() pattern found d
  for pattern in libcublasLt.so.13 libnccl.so.2 libcuda.so.1; do
    found=$( { ls -d /usr/local/cuda*/lib64 /usr/local/cuda*/lib /usr/local/cuda*/targets/*/lib \
                 /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu 2>/dev/null
               python3 -c 'import nvidia, os; [print(os.path.join(p, d, "lib")) for p in nvidia.__path__ for d in os.listdir(p)]' 2>/dev/null
             } | while read -r d; do [[ -e $d/$pattern ]] && { echo "$d"; break; }; done)
    [[ -n $found ]] && cuda_dirs+=("$found")
  done
  # PyTorch (the bench's reference) brings its own cuDNN and cuBLAS: it runs with the caller's
  # path, since the toolkit's folders may hold an older cuDNN it refuses.
  callers_library_path=${LD_LIBRARY_PATH:-}
  local lib_path
  lib_path=$(cd "$build" && pwd)/lib
  for d in "${cuda_dirs[@]}"; do lib_path+=":$d"; done
  export LD_LIBRARY_PATH=$lib_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  bin=$(cd "$build" && pwd)
  train=$bin/trainer/main/stepscope-train
  cli=$bin/profiler/cli/stepscope
}
