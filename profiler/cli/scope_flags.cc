// --step/--steps and --rank (scope_flags.h): parsed, and only the ranks asked for read.
#include "profiler/cli/scope_flags.h"

#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"

namespace stepscope::cli {

StatusOr<std::optional<std::set<int32_t>>> RankSet(const ParsedArgs& args) {
  const auto text = args.Get("rank");
  if (!text) return std::optional<std::set<int32_t>>();
  auto bad = [&] { return InvalidInput("--rank " + *text + ": expected R, R,S,... or A-B (ranks >= 0)"); };
  auto number = [](const std::string& part, int32_t& value) {
    char* end = nullptr;
    const long long parsed = std::strtoll(part.c_str(), &end, 10);
    if (end == part.c_str() || *end != '\0' || parsed < 0 || parsed > 1'000'000) return false;
    value = static_cast<int32_t>(parsed);
    return true;
  };
  std::set<int32_t> ranks;
  size_t begin = 0;
  while (begin <= text->size()) {
    const size_t comma = std::min(text->find(',', begin), text->size());
    const std::string part = text->substr(begin, comma - begin);
    const size_t dash = part.find('-', 1);
    int32_t a = 0, b = 0;
    if (dash == std::string::npos) {
      if (!number(part, a)) return bad();
      b = a;
    } else if (!number(part.substr(0, dash), a) || !number(part.substr(dash + 1), b) || b < a) {
      return bad();
    }
    for (int32_t r = a; r <= b; ++r) ranks.insert(r);
    begin = comma + 1;
  }
  return std::optional<std::set<int32_t>>(std::move(ranks));
}

namespace {

Status NoTraceOfRank(const ParsedArgs& args, size_t inputs, const std::set<int32_t>& found) {
  std::string list;
  for (int32_t r : found) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return InvalidInput("--rank " + *args.Get("rank") + ": no trace of that rank among the " + std::to_string(inputs) +
                      " given (ranks: " + list + ")");
}

}  // namespace

StatusOr<std::vector<trace::Trace>> LoadScopedTraces(const ParsedArgs& args) {
  ASSIGN_OR_RETURN(const auto ranks, RankSet(args));
  if (!ranks) return trace::ReadTraces(args.positional);
  ASSIGN_OR_RETURN(const std::vector<std::string> files, trace::ResolveTracePaths(args.positional));
  std::vector<trace::Trace> kept;
  std::set<int32_t> found;
  for (size_t i = 0; i < files.size(); ++i) {
    ASSIGN_OR_RETURN(trace::Trace trace, trace::ReadTrace(files[i]));
    const int32_t rank = trace.step_info().rank >= 0 ? trace.step_info().rank : static_cast<int32_t>(i);
    found.insert(rank);
    if (ranks->count(rank) > 0) kept.push_back(std::move(trace));
  }
  if (kept.empty()) return NoTraceOfRank(args, files.size(), found);
  return kept;
}

StatusOr<std::vector<const analysis::InputDigest*>> DigestsOfRanks(
    const ParsedArgs& args, std::span<const analysis::InputDigest> inputs,
    const std::function<int32_t(const analysis::InputDigest&)>& rank_of, bool scoped) {
  ASSIGN_OR_RETURN(const auto ranks, RankSet(args));
  std::vector<const analysis::InputDigest*> kept;
  std::set<int32_t> found;
  for (const analysis::InputDigest& input : inputs) {
    RETURN_IF_ERROR(input.read);
    const int32_t recorded = rank_of(input);
    const int32_t rank = recorded >= 0 ? recorded : static_cast<int32_t>(input.input);
    found.insert(rank);
    if (!scoped && ranks && ranks->count(rank) == 0) continue;
    kept.push_back(&input);
  }
  if (!scoped && ranks && kept.empty()) return NoTraceOfRank(args, inputs.size(), found);
  return kept;
}

}  // namespace stepscope::cli
