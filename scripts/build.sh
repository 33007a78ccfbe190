#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release). Re-running only rebuilds what
# changed. Usage: scripts/build.sh [preset] [extra cmake --build args...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
scripts/configure.sh "$preset"
cmake --build --preset "$preset" "$@"
