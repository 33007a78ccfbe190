// What each process of a job spread over MPI (`mpirun -np N stepscope COMMAND DIR`) sends to
// process 0: per input it read, the digests the command combines from (clock_align.h ClockDigest,
// stragglers.h StragglerDigest, rank_critical_path.h RankPathDigest, the input's own report as the
// command rendered it, steps.h TraceSteps (steps, diff), gpu rows, efficiency.h EfficiencyInput),
// or why it could not read it. A digest is a few hundred bytes per step and collective, whatever
// the size of the trace (a rendered report: the size of its output), so process 0 holds the
// whole job's digests while each process holds one trace at a time.
//
// The bytes: "stepscope.digests/3\n", then per input: its index among all the inputs (varint),
// its read status (code, message), and its digests, each written field by field as its kind's
// description (distributed_digest.cc) lists them; integers as zigzag varints, doubles as their 64
// bits, strings as a length and the bytes, lists and maps as a count and their items, optionals
// as a flag and the value. Parsing checks every length against
// what is left.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "profiler/analysis/clock_align.h"
#include "profiler/analysis/efficiency.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/rank_critical_path.h"
#include "profiler/analysis/steps.h"
#include "profiler/analysis/stragglers.h"

namespace stepscope::analysis {

// One step window of an input's own report, as the command rendered it (text or JSON, to the
// analysis only bytes): process 0 numbers and selects the windows (--step) and joins them.
struct RenderedWindow {
  int64_t step = -1;     // as the trace records it
  std::string marker;    // StepWindow::marker
  bool whole = false;    // the whole trace (its only window)
  std::string body;
  bool operator==(const RenderedWindow& other) const = default;
};
struct RenderedReport {
  std::string head;      // what comes before its windows
  std::string lead;      // the first of its body, before the windows (text)
  std::vector<RenderedWindow> windows;  // every window (NumberedStepWindows' kWholeUnlessSeveral)
  // The number each of the input's steps records (-1: none), kEveryStep: what numbering the
  // windows takes (step_windows.h).
  std::vector<int64_t> steps;
  bool operator==(const RenderedReport& other) const = default;
};

// `gpu`'s digest of one input: its rank, the number each of its steps records (-1: none), and
// its rows (GpuBreakdownOfInput) in the windows it took: with --step, those whose number is in
// the range, its unnumbered steps numbered from `numbered_from` (its first step's place among
// all the inputs' steps; -1 where that was not known: every unnumbered step taken). Process 0
// numbers the steps over every input and checks the windows taken were those it selects.
struct GpuDigest {
  std::string source;
  int32_t rank = -1;
  std::vector<int64_t> steps;
  int64_t numbered_from = -1;
  std::vector<GpuBreakdown> rows;
};

// The digests a command combines from; DigestInput takes only those asked for.
struct DigestKinds {
  bool clock = false;
  bool stragglers = false;
  bool rank_paths = false;  // needs clock
};

struct InputDigest {
  size_t input = 0;       // its place among all the inputs
  Status read;            // reading it failed: why (the digests are empty)
  ClockDigest clock;
  StragglerDigest stragglers;
  RankPathDigest rank_paths;
  RenderedReport report;  // filled by the command (profiler/cli)
  TraceSteps steps;       // `steps` and `diff`: StepsOfInput
  GpuDigest gpu;          // `gpu`: filled by the command (profiler/cli)
  std::string path;       // the input as resolved (trace::ResolveTracePaths), to read it again
  // Of a command with two sides (diff: before and after --vs): 0 side A, 1 side B.
  uint32_t side = 0;
  // efficiency: the input's part; none when --rank leaves the input out.
  std::optional<EfficiencyInput> efficiency;
};

// The digests of one input of an analysis: what `align` and `stragglers` need of it (clock and
// stragglers), or the kinds asked for.
InputDigest DigestInput(const trace::Trace& trace, size_t input);
InputDigest DigestInput(const trace::Trace& trace, size_t input, const DigestKinds& kinds);

std::string SerializeDigests(std::span<const InputDigest> digests);
// Fails (InvalidInput naming `from`) on bytes that SerializeDigests did not write.
StatusOr<std::vector<InputDigest>> ParseDigests(std::string_view bytes, const std::string& from);

}  // namespace stepscope::analysis
