// The gather to process 0 in rounds of at most 2 GiB (distributed_gather.h).
#include "profiler/cli/distributed_gather.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "base/check.h"

namespace stepscope::cli {

GatherRounds::GatherRounds(std::span<const uint64_t> sizes, uint64_t round_bytes)
    : left_(sizes.begin(), sizes.end()), sent_(sizes.size(), 0), round_bytes_(round_bytes) {
  STEPSCOPE_CHECK(round_bytes >= 1 && round_bytes <= kMaxGatherRoundBytes);
}

bool GatherRounds::Next(GatherRound& round) {
  while (first_ < left_.size() && left_[first_] == 0) ++first_;
  if (first_ == left_.size()) return false;
  const size_t processes = left_.size();
  round.counts.assign(processes, 0);
  round.sent_from.assign(sent_.begin(), sent_.end());
  round.displacements.assign(processes, 0);
  uint64_t room = round_bytes_;
  for (size_t p = first_; p < processes && room > 0; ++p) {
    const uint64_t count = std::min(left_[p], room);
    // Within the round's buffer, at most kMaxGatherRoundBytes: both fit an int.
    round.displacements[p] = static_cast<int>(round_bytes_ - room);
    round.counts[p] = static_cast<int>(count);
    left_[p] -= count;
    sent_[p] += count;
    room -= count;
  }
  round.total = static_cast<int>(round_bytes_ - room);
  return true;
}

void GatherRounds::Place(const GatherRound& round, std::string_view received, std::vector<std::string>& shares) {
  STEPSCOPE_CHECK(received.size() == static_cast<size_t>(round.total) && shares.size() == round.counts.size());
  for (size_t p = 0; p < shares.size(); ++p) {
    if (round.counts[p] == 0) continue;
    STEPSCOPE_CHECK(shares[p].size() == round.sent_from[p]);  // a process's bytes arrive in order
    shares[p].append(
        received.substr(static_cast<size_t>(round.displacements[p]), static_cast<size_t>(round.counts[p])));
  }
}

std::optional<uint64_t> ParseGatherRoundBytes(const char* text) {
  if (text == nullptr || *text == '\0') return kDefaultGatherRoundBytes;
  uint64_t bytes = 0;
  const char* end = text + std::strlen(text);
  const auto [stop, error] = std::from_chars(text, end, bytes);
  if (error != std::errc() || stop != end || bytes < 1 || bytes > kMaxGatherRoundBytes) return std::nullopt;
  return bytes;
}

}  // namespace stepscope::cli
