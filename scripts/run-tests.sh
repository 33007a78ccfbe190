#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors, and runs every test
# through ctest; then builds the trace library's tests under ASan+UBSan and runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh ci
ctest --preset ci -j2
scripts/build.sh asan --target stepscope_trace_tests stepscope_base_tests stepscope_cli_tests
ctest --preset asan -j2 -L sanitized
