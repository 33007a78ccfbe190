#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in the clang ASan+UBSan tree (build/asan, the asan preset)
# and runs each for a short time from its seed corpus (fuzz/corpus/<reader>). A crash, leak or
# sanitizer report fails the script and leaves the reproducer in build/asan/fuzz/artifacts.
#   scripts/fuzz.sh            # 20 s per fuzzer (CI)
#   FUZZ_SECONDS=600 scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-20}"
scripts/build.sh asan --target chrome_json_fuzzer step_stats_pb_fuzzer step_stats_pbtxt_fuzzer \
  xspace_fuzzer perfetto_proto_fuzzer
build=build/asan/fuzz
mkdir -p "$build/artifacts"
run() {
  local fuzzer="$1" seeds="$2"
  local corpus="$build/corpus/$seeds"
  mkdir -p "$corpus"
  echo "fuzzing $fuzzer for ${seconds}s"
  "$build/$fuzzer" "$corpus" "fuzz/corpus/$seeds" -max_total_time="$seconds" -max_len=65536 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$fuzzer-" \
    2>"$build/$fuzzer.log" || { tail -40 "$build/$fuzzer.log"; echo "$fuzzer failed"; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$fuzzer.log" | sed "s/^/  /"
}
run chrome_json_fuzzer json
run step_stats_pb_fuzzer pb
run step_stats_pbtxt_fuzzer pbtxt
run xspace_fuzzer xspace
run perfetto_proto_fuzzer pftrace
echo "fuzzing: no crashes"
