#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in the clang ASan+UBSan tree (build/asan, the asan preset)
# and runs each for a short time from its seed corpus (fuzz/corpus/<reader>). A crash, leak or
# sanitizer report fails the script and leaves the reproducer in build/asan/fuzz/artifacts.
#   scripts/fuzz.sh            # 20 s per fuzzer (CI), two fuzzers at a time
#   FUZZ_SECONDS=600 scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-20}"
scripts/build.sh asan --target chrome_json_fuzzer step_stats_pb_fuzzer step_stats_pbtxt_fuzzer \
  xspace_fuzzer perfetto_proto_fuzzer
build=build/asan/fuzz
mkdir -p "$build/artifacts"
# One fuzzer run; its summary (or the failure's tail) goes to <fuzzer>.summary, printed in order
# once all have run.
run() {
  local fuzzer="$1" seeds="$2"
  local corpus="$build/corpus/$seeds"
  mkdir -p "$corpus"
  if "$build/$fuzzer" "$corpus" "fuzz/corpus/$seeds" -max_total_time="$seconds" -max_len=65536 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/artifacts/$fuzzer-" \
    2>"$build/$fuzzer.log"; then
    { echo "fuzzed $fuzzer for ${seconds}s"
      grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$fuzzer.log" | sed "s/^/  /"
    } >"$build/$fuzzer.summary"
  else
    { tail -40 "$build/$fuzzer.log"; echo "$fuzzer failed"; } >"$build/$fuzzer.summary"
    return 1
  fi
}
# Two at a time (one per core of a CI machine; each fuzzer runs on one thread).
fuzzers=(chrome_json_fuzzer:json step_stats_pb_fuzzer:pb step_stats_pbtxt_fuzzer:pbtxt xspace_fuzzer:xspace
         perfetto_proto_fuzzer:pftrace)
parallel="${FUZZ_PARALLEL:-2}"
failed=0
pids=()
for entry in "${fuzzers[@]}"; do
  run "${entry%%:*}" "${entry#*:}" &
  pids+=($!)
  if (( ${#pids[@]} == parallel )); then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
for entry in "${fuzzers[@]}"; do cat "$build/${entry%%:*}.summary"; done
(( failed == 0 )) || { echo "fuzzing: a fuzzer failed (reproducers in $build/artifacts)"; exit 1; }
echo "fuzzing: no crashes"
