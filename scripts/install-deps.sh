#!/usr/bin/env bash
# Installs the Debian packages stepscope builds with, only those that are missing (idempotent),
# then the Python module's build and test packages from PyPI (python/requirements.txt) into the
# virtual environment build/python-env, which the ci preset builds the module with.
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
  python3-dev python3-venv            # the Python module (python/)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-14 libclang-rt-14-dev   # libFuzzer targets (scripts/fuzz.sh)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

python_env() {
  # The Python module's build and test packages, from PyPI, in a virtual environment of the
  # repository's own (it sees the system's packages, so only what is missing is downloaded).
  local env=build/python-env
  cd "$(dirname "$0")/.."
  if [ ! -x "$env/bin/python" ]; then python3 -m venv --system-site-packages "$env"; fi
  if ! "$env/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as m, re, sys
for line in open("python/requirements.txt"):
    spec = line.split("#")[0].strip()
    if spec:
        name, low = re.match(r"([A-Za-z0-9_.-]+)>=([0-9.]+)", spec).groups()
        have = tuple(int(x) for x in re.findall(r"\d+", m.version(name))[:3])
        if have < tuple(int(x) for x in low.split(".")): sys.exit(1)
PY
  then
    echo "install-deps: installing the Python module's packages (python/requirements.txt) in $env"
    "$env/bin/python" -m pip install -q -r python/requirements.txt
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  python_env
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
python_env
