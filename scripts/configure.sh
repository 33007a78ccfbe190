#!/usr/bin/env bash
# Configures one CMake preset (default: release) in build/<preset>. A tree configured before the
# presets chose Ninja (and clang for asan) is configured afresh: CMake refuses to switch
# generators in place. Usage: scripts/configure.sh [preset]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
cache="build/$preset/CMakeCache.txt"
fresh=()
if [[ -f "$cache" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  fresh=(--fresh)
fi
cmake --preset "$preset" "${fresh[@]}" >/dev/null
