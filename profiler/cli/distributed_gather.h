// The gather of every process's digests to process 0 (distributed.h) in rounds. MPI counts and
// displacements are ints, so one MPI_Gatherv moves at most 2 GiB in all; a job's digests can be
// more (about 4 MB per 1 GB trace of collectives: 8 GB for 2,048 such ranks). Each round moves at
// most `round_bytes` into one buffer at process 0: the processes in order, each sending as much
// of what it has left as the round still holds, so every round but the last is full and a
// process's bytes arrive in order, split anywhere. Every process computes the same rounds from
// the sizes of all (apart from MPI here, so tests run the rounds without it).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stepscope::cli {

// The environment variable that sets the bytes of one round (default kDefaultGatherRoundBytes):
// set small, it checks the rounds on a small job.
inline constexpr const char* kGatherRoundBytesVariable = "STEPSCOPE_MPI_GATHER_ROUND_BYTES";
inline constexpr uint64_t kDefaultGatherRoundBytes = uint64_t{1} << 28;  // 256 MiB
inline constexpr uint64_t kMaxGatherRoundBytes = 2147483647;             // INT_MAX: MPI's counts

// One round: per process, the bytes it sends (MPI_Gatherv's counts), where they start in its own
// bytes, and where they land in the round's buffer (its displacements).
struct GatherRound {
  std::vector<int> counts;
  std::vector<uint64_t> sent_from;
  std::vector<int> displacements;
  int total = 0;  // the round's buffer
};

class GatherRounds {
 public:
  // `sizes`: every process's bytes, in process order; round_bytes in [1, kMaxGatherRoundBytes].
  GatherRounds(std::span<const uint64_t> sizes, uint64_t round_bytes);

  // The next round into `round`; false when everything was sent (an empty gather: no round).
  bool Next(GatherRound& round);

  // Process 0: the round's buffer (`received`) appended to each process's bytes (`shares`, one
  // per process).
  static void Place(const GatherRound& round, std::string_view received, std::vector<std::string>& shares);

 private:
  std::vector<uint64_t> left_;  // per process, bytes not yet sent
  std::vector<uint64_t> sent_;  // per process, bytes sent
  uint64_t round_bytes_;
  size_t first_ = 0;            // the first process with bytes left
};

// The bytes of a round from the environment variable's text (nullptr: unset): the default when
// unset, nullopt when it is not a whole number in [1, kMaxGatherRoundBytes].
std::optional<uint64_t> ParseGatherRoundBytes(const char* text);

}  // namespace stepscope::cli
