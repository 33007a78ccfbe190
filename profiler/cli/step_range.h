// The --step N / --steps A-B flags the per-step commands share (gpu, idle, launches, stragglers).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "base/flags.h"
#include "base/status.h"

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

}  // namespace stepscope::cli
