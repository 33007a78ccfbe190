#!/usr/bin/env bash
# scripts/gpu/gpu-run.sh on a machine without a GPU, end to end:
#  1. without --rehearse every GPU stage is skipped with a line saying why, and the summary is
#     packed;
#  2. a rehearsal on CPU devices runs the stages, writes the figures file with one line per model
#     and figure, and packs logs and samples; the overhead stage's runs at every level give each
#     level's figure lines;
#  3. a stage still running at the deadline is stopped, marked STOPPED, and what the stages
#     before it wrote is packed; a stage that no longer fits is skipped;
#  4. the run killed outright (as the device tool kills a call past its limit) still leaves the
#     earlier stages' results packed.
# The trainer in 3 and 4 is the real one behind a wrapper that hangs on --profile (the samples
# stage's first profiled run), so the stop falls on a known stage.
#
#   gpu_run_test.sh STEPSCOPE_TRAIN STEPSCOPE_CLI
set -uo pipefail
train=$(readlink -f "${1:?usage: gpu_run_test.sh STEPSCOPE_TRAIN STEPSCOPE_CLI}")
cli=$(readlink -f "${2:?}")
repo=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_line() {  # FILE REGEX WHAT
  grep -Eq "$2" "$1" || { fail "$3: no line matching /$2/ in $1:"; sed 's/^/    /' "$1"; }
}

# A build directory with the two programs the script runs.
fake_build() {  # DIR TRAINER
  mkdir -p "$1/trainer/main" "$1/profiler/cli"
  ln -s "$2" "$1/trainer/main/stepscope-train"
  ln -s "$cli" "$1/profiler/cli/stepscope"
}
fake_build "$tmp/build" "$train"
cat > "$tmp/hanging-train" <<EOF
#!/usr/bin/env bash
for a in "\$@"; do [[ \$a == --profile ]] && { echo \$\$ > "$tmp/hang.pid"; exec sleep 1000; }; done
exec "$train" "\$@"
EOF
chmod +x "$tmp/hanging-train"
fake_build "$tmp/hanging" "$tmp/hanging-train"

export STEPSCOPE_GPU_RUN_NO_TORCH=1  # the tests need no PyTorch
unset OUT

echo "== 1. no GPU, no rehearsal"
STEPSCOPE_GPU_BUILD=$tmp/build "$repo/scripts/gpu/gpu-run.sh" --out "$tmp/out1" --deadline 60 \
  > "$tmp/log1" 2>&1 || fail "run 1 exited $? (no stage ran, none failed)"
for stage in smoke overhead virtual samples bench gputests; do
  expect_line "$tmp/out1/summary.txt" "^$stage: skipped: no GPU on this machine" "run 1, $stage"
done
[[ -s $tmp/out1/results.tar.gz ]] || fail "run 1: no results.tar.gz"

echo "== 2. rehearsal on CPU devices"
STEPSCOPE_GPU_BUILD=$tmp/build "$repo/scripts/gpu/gpu-run.sh" --rehearse --only smoke,samples,bench \
  --out "$tmp/out2" --deadline 500 > "$tmp/log2" 2>&1 || { fail "run 2 exited $?"; cat "$tmp/log2"; }
for stage in smoke samples bench; do expect_line "$tmp/out2/summary.txt" "^$stage: ok" "run 2"; done
figures=$(ls "$tmp"/out2/cpu-rehearsal-*.txt 2>/dev/null | head -1)
if [[ -z $figures ]]; then
  fail "run 2: no figures file"
else
  expect_line "$figures" "^REHEARSAL" "run 2: the rehearsal says it is one"
  for model in lstm_small lstm_medium resnet50; do
    expect_line "$figures" "^profiled_over_plain $model [0-9.]+ [0-9.]+ [0-9.]+$" "run 2, $model"
    expect_line "$figures" "^step_over_pytorch $model (nan|[0-9.]+)$" "run 2, $model"
  done
fi
tar -tzf "$tmp/out2/results.tar.gz" > "$tmp/list2"
expect_line "$tmp/list2" "smoke/lstm_small.jsonl" "run 2: smoke's metrics packed"
expect_line "$tmp/list2" "bench/lstm_medium_plain_round1.jsonl" "run 2: bench's metrics packed"
for stage in smoke samples bench; do
  expect_line "$tmp/list2" "^./$stage/log.txt$" "run 2: $stage's log packed"
done
tar -xzf "$tmp/out2/results.tar.gz" -O ./smoke/log.txt > "$tmp/smoke2"
expect_line "$tmp/smoke2" "lstm_small: 3 steps against the CPU reference, worst relative difference 0.00e\+00 \(ok\)" \
  "run 2: the CPU rehearsal reproduces the committed CPU losses"
tar -tf "$tmp/out2/samples-ours.tar" > "$tmp/samples2" || fail "run 2: no samples-ours.tar"
expect_line "$tmp/samples2" "lstm_small_step3.pb.gz" "run 2: the LSTM sample"

echo "== 2b. the overhead stage rehearsed"
STEPSCOPE_GPU_BUILD=$tmp/build "$repo/scripts/gpu/gpu-run.sh" --rehearse --only overhead \
  --out "$tmp/out2b" --deadline 300 > "$tmp/log2b" 2>&1 || { fail "run 2b exited $?"; cat "$tmp/log2b"; }
expect_line "$tmp/out2b/summary.txt" "^overhead: ok" "run 2b"
tar -xzf "$tmp/out2b/results.tar.gz" -O ./overhead/figures.txt > "$tmp/overhead2b" 2>/dev/null ||
  fail "run 2b: no overhead/figures.txt packed"
for level in host attached activity launches all launches+stay launches+hw; do
  expect_line "$tmp/overhead2b" "^unprofiled_over_plain lstm_small ${level/+/\\+} [0-9.]+ [0-9.]+ [0-9.]+$" \
    "run 2b, $level: unprofiled steps against plain"
  expect_line "$tmp/overhead2b" "^us_per_gpu_op lstm_small ${level/+/\\+} " "run 2b, $level"
done

echo "== 3. a stage stopped by the deadline"
start=$SECONDS
STEPSCOPE_GPU_BUILD=$tmp/hanging "$repo/scripts/gpu/gpu-run.sh" --rehearse --only smoke,samples,bench \
  --out "$tmp/out3" --deadline 70 > "$tmp/log3" 2>&1
status=$?
((status == 1)) || fail "run 3 exited $status, expected 1 (a stage stopped)"
((SECONDS - start < 80)) || fail "run 3 took $((SECONDS - start)) s, past its 70 s deadline"
expect_line "$tmp/out3/summary.txt" "^smoke: ok" "run 3"
expect_line "$tmp/out3/summary.txt" "^samples: STOPPED at its time limit" "run 3"
expect_line "$tmp/out3/summary.txt" "^bench: skipped: -?[0-9]+ s left before the deadline" "run 3"
tar -tzf "$tmp/out3/results.tar.gz" | grep -q "smoke/lstm_small.jsonl" ||
  fail "run 3: smoke's results are not in results.tar.gz"
hung=$(cat "$tmp/hang.pid" 2>/dev/null)
[[ -n $hung ]] || fail "run 3: the hanging trainer never ran"
[[ -n $hung ]] && kill -0 "$hung" 2>/dev/null && { fail "run 3 left the stopped stage's trainer running"; kill "$hung"; }
rm -f "$tmp/hang.pid"

echo "== 4. the whole run killed while a stage runs"
STEPSCOPE_GPU_BUILD=$tmp/hanging "$repo/scripts/gpu/gpu-run.sh" --rehearse --only smoke,samples \
  --out "$tmp/out4" --deadline 300 > "$tmp/log4" 2>&1 &
pid=$!
for _ in $(seq 120); do grep -q '^smoke: ok' "$tmp/out4/summary.txt" 2>/dev/null && break; sleep 1; done
# Each stage is packed as it ends: wait for smoke's pack (seconds on a loaded machine), then kill
# the run while the next stage hangs.
for _ in $(seq 60); do
  tar -tzf "$tmp/out4/results.tar.gz" 2>/dev/null | grep -q "smoke/lstm_small.jsonl" && break
  sleep 1
done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
expect_line "$tmp/out4/summary.txt" "^smoke: ok" "run 4"
tar -tzf "$tmp/out4/results.tar.gz" | grep -q "smoke/lstm_small.jsonl" ||
  fail "run 4: smoke's results are not in results.tar.gz after the kill"
# The killed script's stage (its own process group) outlives a SIGKILL of the script: end it,
# the hanging trainer's parents being timeout and the stage's group leader.
for _ in $(seq 20); do [[ -s $tmp/hang.pid ]] && break; sleep 0.5; done
if [[ -s $tmp/hang.pid ]]; then
  hung=$(cat "$tmp/hang.pid")
  bounded_pid=$(ps -o ppid= -p "$hung" | tr -d ' ')
  stage_pid=$(ps -o ppid= -p "$bounded_pid" | tr -d ' ')
  kill -KILL -- "-$stage_pid" 2>/dev/null
  kill "$hung" 2>/dev/null
  sleep 1
fi

if ((failures)); then echo "$failures failure(s)"; exit 1; fi
echo "all passed"
