#!/usr/bin/env bash
# Installs what is missing, builds everything with warnings as errors, and runs every test
# through ctest; then builds the tests labelled `sanitized` under ASan+UBSan (clang: a third
# faster to build than g++ with both sanitizers) and runs them, and fuzzes every reader briefly
# in the same tree (scripts/fuzz.sh); then the threaded ones (labels parallel, collect, runtime,
# threads; no benchmarks) under ThreadSanitizer, each program's threaded cases only
# (THREADED_CASES in tests/CMakeLists.txt). Ends with the test groups this machine's
# configuration could not build (CMake writes them to <build>/skipped-tests.txt). Ninja builds
# the targets named to a stage in parallel (make's top level takes them one at a time).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh ci
ctest --preset ci -j2
# Each test is named after the program it runs (benchmark runs: <program>_smoke and
# <program>_json; MPI runs with more ranks: <program>_<N>_ranks).
programs() {
  ctest --preset "$@" -N | awk '/Test +#/ {sub(/_(smoke|json)$/, "", $3); sub(/_[0-9]+_ranks$/, "", $3); print $3}' | sort -u
}
scripts/configure.sh asan
sanitized=$(programs asan -L sanitized)
scripts/build.sh asan --target $sanitized
ctest --preset asan -j2 -L sanitized
scripts/fuzz.sh  # the fuzzers live in the same tree
# TSan: threaded code (towers, fusion buffer, collectives, collectors, allocators). Benchmark
# smoke runs are left out: under TSan the all-reduce one alone takes minutes, and the tests
# cover the same algorithms. So are the 3- and 4-rank MPI runs (`many_ranks`): the 2-rank run
# checks the same threads under TSan, and the others run in the plain build.
tsan_selection=(-L 'parallel|collect|runtime|threads' -LE 'benchmark|many_ranks')
scripts/configure.sh tsan
threaded=$(programs tsan "${tsan_selection[@]}")
scripts/build.sh tsan --target $threaded
ctest --preset tsan -j2 "${tsan_selection[@]}"
echo
if [[ -s build/ci/skipped-tests.txt ]]; then
  echo "All tests passed; test groups skipped in this configuration (build/ci):"
  sed 's/^/  /' build/ci/skipped-tests.txt
else
  echo "All tests passed; no test group skipped."
fi
