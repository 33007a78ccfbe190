#!/usr/bin/env bash
# Installs the Debian packages stepscope builds with, only those that are missing (idempotent).
# Needs root or sudo. The CUDA toolkit is optional and not installed here (see docs/gpu.md).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config zlib1g-dev libzstd-dev
  protobuf-compiler libprotobuf-dev
  nlohmann-json3-dev libsimdjson-dev
  libopenblas-dev
  libopenmpi-dev openmpi-bin
  qt6-base-dev
  xvfb xdotool imagemagick python3   # the viewer's session in a real X window (tests/viewer/session)
  chromium   # stepscope report opened headless, network off (tests/report/report_in_browser.py)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev   # libFuzzer targets (scripts/fuzz.sh)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
