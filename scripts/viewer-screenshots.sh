#!/usr/bin/env bash
# Regenerates the screenshots of docs/viewer.md (docs/images/viewer-*.png) from the scripted
# session in a real X window (tests/viewer/session/viewer_session.py) on the H100 ResNet-50
# step: each picture is taken when the session reaches that feature, and checked like the test
# checks it. Needs Xvfb, xdotool, ImageMagick and python3 (scripts/install-deps.sh).
#   scripts/viewer-screenshots.sh [BUILD_DIR]     (default build/release; built if needed)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
if [[ ! -f "$build/CMakeCache.txt" ]]; then scripts/configure.sh release; fi
cmake --build "$build" --target stepscope-view stepscope
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 tests/viewer/session/viewer_session.py --view "$build/viewer/stepscope-view" \
  --cli "$build/profiler/cli/stepscope" --trace samples/h100_resnet50_b32_step3.pb.gz \
  --expect-lane stream --out "$out" --docs docs/images
# PNG8 at 256 colours keeps each picture small (the docs stay light to clone).
ls -l docs/images/viewer-*.png | awk '{ if ($5 > 200 * 1024) { print "too big: " $9 " " $5; bad = 1 } } END { exit bad }'
