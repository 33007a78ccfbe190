// The all-reduce spec of tf_cnn_benchmarks (docs/trainers.md §2): which algorithm reduces which
// gradients, chosen by gradient size.
//
//   spec  := range [":" size ":" range]*
//   range := alg ["#" shards] ["/" alg]      (also accepted: alg "/" alg "#" shards)
//   size  := int [K|M|G|T]                   (powers of two; counts ELEMENTS, not bytes)
//
// "pscpu:32K:ring#2" reduces gradients of at most 32768 elements with pscpu and everything larger
// with a two-shard ring. Limits must strictly increase; the last range has no limit.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace stepscope::parallel {

enum class Algorithm {
  kNccl,        // NCCL within one process (GPU builds)
  kRing,        // reduce-scatter + all-gather around the participants ("xring" in the original)
  kPsCpu,       // gather to a host accumulator, sum, broadcast; round-robin over reducers
  kPsGpu,       // gather to one participant's buffer, sum, broadcast; round-robin over reducers
  kMpi,         // across processes: shared memory on one host, MPI_Allreduce across hosts
  kCollective,  // TF collective ops; here the ring
};

// Lower-case spec name of `algorithm` ("ring", "pscpu", ...).
std::string_view AlgorithmName(Algorithm algorithm);

// One range of a spec: `algorithm` within a worker, `shards` pieces per gradient, and the optional
// `across_workers` algorithm of a hierarchical "a/b".
struct AllReduceRange {
  Algorithm algorithm = Algorithm::kRing;
  int shards = 1;
  std::optional<Algorithm> across_workers;

  bool operator==(const AllReduceRange&) const = default;
};

struct AllReduceSpec {
  std::vector<AllReduceRange> ranges;  // at least one
  // limits[i] is the largest element count range i takes; ranges.size() - 1 entries, increasing.
  std::vector<int64_t> limits;

  bool operator==(const AllReduceSpec&) const = default;
};

// Parses `text`. Errors are kInvalidInput with a message that quotes the spec, names the byte
// offset of the bad part and draws a caret line under it.
StatusOr<AllReduceSpec> ParseAllReduceSpec(std::string_view text);

// Canonical text of `spec` (parses back to an equal spec). Limits print with the largest exact
// suffix ("32K").
std::string FormatAllReduceSpec(const AllReduceSpec& spec);

// Whether any range of `spec` uses `algorithm`, within or across workers.
bool UsesAlgorithm(const AllReduceSpec& spec, Algorithm algorithm);

// Which range of `spec` reduces each gradient: split_grads_by_size semantics, so a gradient with
// num_elements <= limits[i] goes to the first such range i, everything else to the last range.
std::vector<int> SplitBySize(const AllReduceSpec& spec, std::span<const int64_t> num_elements);

}  // namespace stepscope::parallel
