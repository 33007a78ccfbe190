// The flags that scope the analysis commands (gpu, idle, launches, annotations, kernel-patterns,
// critical-path, overlap, stragglers): --step N / --steps A-B (profiler steps: ProfilerStep#N, or a
// step trace's number) and --rank R (R, R,S,... or A-B: the traces of those ranks).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/flags.h"
#include "base/status.h"
#include "profiler/analysis/distributed_digest.h"
#include "profiler/trace/trace.h"

namespace stepscope::cli {

// --step N or --steps A-B: [first, last], or nullopt for every step.
inline StatusOr<std::optional<std::pair<int64_t, int64_t>>> StepRange(const ParsedArgs& args) {
  std::optional<std::pair<int64_t, int64_t>> range;
  auto number = [](const std::string& text, int64_t& value) {
    char* end = nullptr;
    value = std::strtoll(text.c_str(), &end, 10);
    return end != text.c_str() && *end == '\0';
  };
  if (args.Has("step") && args.Has("steps")) return InvalidInput("give --step or --steps, not both");
  if (auto text = args.Get("step")) {
    int64_t n = 0;
    if (!number(*text, n)) return InvalidInput("--step " + *text + ": expected a step number");
    range = std::pair{n, n};
  }
  if (auto text = args.Get("steps")) {
    const size_t dash = text->find('-', 1);
    int64_t a = 0, b = 0;
    if (dash == std::string::npos || !number(text->substr(0, dash), a) || !number(text->substr(dash + 1), b) || b < a) {
      return InvalidInput("--steps " + *text + ": expected A-B with A <= B");
    }
    range = std::pair{a, b};
  }
  return range;
}

// The flags' help lines, for commands' flags().
inline FlagSpec StepFlag(const std::string& what) { return {"step", "N", what + " in step N (ProfilerStep#N, or a step trace's number)"}; }
inline FlagSpec StepsFlag(const std::string& what) { return {"steps", "A-B", what + " in steps A to B"}; }
inline FlagSpec RankFlag() {
  return {"rank", "R", "only the traces of rank R (also R,S,... or A-B; a trace without a rank is its position among the files)"};
}

// --rank: the ranks to keep, or nullopt for every rank.
StatusOr<std::optional<std::set<int32_t>>> RankSet(const ParsedArgs& args);

// The traces of the files (or directories) given, those of --rank only when it is given: each
// file is read in turn and one of another rank dropped at once, so memory holds the kept ones.
// Fails naming the ranks found when none is kept.
StatusOr<std::vector<trace::Trace>> LoadScopedTraces(const ParsedArgs& args);

// The same over inputs already digested (analysis/distributed_digest.h), in input order: the first
// that could not be read fails the run; --rank keeps those of its ranks (`rank_of`: the rank an
// input records, -1 unknown: its place among all the inputs), every one without it or when
// `scoped` (the inputs are --rank's already). Fails naming the ranks found when none is kept.
StatusOr<std::vector<const analysis::InputDigest*>> DigestsOfRanks(
    const ParsedArgs& args, std::span<const analysis::InputDigest> inputs,
    const std::function<int32_t(const analysis::InputDigest&)>& rank_of, bool scoped = false);

}  // namespace stepscope::cli
