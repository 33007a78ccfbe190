// Ring and parameter-server all-reduce over participant buffers in one address space.
#include "trainer/parallel/collectives.h"

#include <algorithm>
#include <cstring>

namespace stepscope::parallel {
namespace {

// Start of part `index` when `length` elements are cut into `parts` nearly equal parts.
inline int64_t PartBegin(int64_t length, int parts, int index) { return length * index / parts; }

inline int Mod(int value, int n) { return ((value % n) + n) % n; }

void AddInto(float* __restrict dst, const float* __restrict src, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

// The last reduce-scatter step also applies the divisor, so the owner publishes final values.
void AddDivideInto(float* __restrict dst, const float* __restrict src, int64_t count,
                   float divisor) {
  for (int64_t i = 0; i < count; ++i) dst[i] = (dst[i] + src[i]) / divisor;
}

void DivideBy(float* data, int64_t count, float divisor) {
  for (int64_t i = 0; i < count; ++i) data[i] /= divisor;
}

void CopyElements(float* dst, const float* src, int64_t count) {
  if (count > 0 && dst != src) std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
}

}  // namespace

void RingAllReduceShare(ParticipantTeam& team, int participant, std::span<float* const> buffers,
                        int64_t num_elements, int shards, int64_t chunk_elements, float divisor) {
  const int n = team.size();
  const int p = participant;
  shards = std::max(1, shards);
  chunk_elements = std::max<int64_t>(1, chunk_elements);
  if (n == 1) {
    if (divisor != 1.0f) DivideBy(buffers[0], num_elements, divisor);
    return;
  }
  const int64_t segment_elements = chunk_elements * n * shards;
  for (int64_t segment = 0; segment < num_elements; segment += segment_elements) {
    const int64_t segment_length = std::min(segment_elements, num_elements - segment);
    // Chunk c of ring r within this segment, as [begin, end) offsets into the buffers.
    auto chunk = [&](int ring, int c, int64_t* begin, int64_t* end) {
      int64_t ring_begin = segment + PartBegin(segment_length, shards, ring);
      int64_t ring_length = PartBegin(segment_length, shards, ring + 1) -
                            PartBegin(segment_length, shards, ring);
      *begin = ring_begin + PartBegin(ring_length, n, c);
      *end = ring_begin + PartBegin(ring_length, n, c + 1);
    };
    // Reduce-scatter. Forward rings: at step s participant p adds its left neighbour's chunk
    // p-1-s into its own; chunk c ends fully reduced on participant c-1. Reverse rings mirror it.
    // No participant writes a chunk its neighbour reads in the same step.
    for (int step = 0; step < n - 1; ++step) {
      for (int ring = 0; ring < shards; ++ring) {
        const bool forward = ring % 2 == 0;
        const int from = forward ? Mod(p - 1, n) : Mod(p + 1, n);
        const int c = forward ? Mod(p - 1 - step, n) : Mod(p + 1 + step, n);
        int64_t begin = 0, end = 0;
        chunk(ring, c, &begin, &end);
        if (step == n - 2 && divisor != 1.0f) {
          AddDivideInto(buffers[p] + begin, buffers[from] + begin, end - begin, divisor);
        } else {
          AddInto(buffers[p] + begin, buffers[from] + begin, end - begin);
        }
      }
      team.Barrier();
    }
    // All-gather: at step s participant p copies chunk p-s (forward) from its left neighbour,
    // which completed it in the step before.
    for (int step = 0; step < n - 1; ++step) {
      for (int ring = 0; ring < shards; ++ring) {
        const bool forward = ring % 2 == 0;
        const int from = forward ? Mod(p - 1, n) : Mod(p + 1, n);
        const int c = forward ? Mod(p - step, n) : Mod(p + step, n);
        int64_t begin = 0, end = 0;
        chunk(ring, c, &begin, &end);
        CopyElements(buffers[p] + begin, buffers[from] + begin, end - begin);
      }
      team.Barrier();
    }
  }
}

void ParameterServerAllReduceShare(ParticipantTeam& team, int participant,
                                   std::span<float* const> buffers, int64_t num_elements,
                                   int shards, int first_reducer, float* host_accumulator,
                                   float divisor) {
  const int n = team.size();
  const int p = participant;
  shards = std::max(1, shards);
  auto reducer_of = [&](int piece) { return Mod(first_reducer + piece, n); };
  // Gather and sum: each reducer sums its pieces over all participants, in participant order.
  for (int piece = 0; piece < shards; ++piece) {
    if (reducer_of(piece) != p) continue;
    const int64_t begin = PartBegin(num_elements, shards, piece);
    const int64_t end = PartBegin(num_elements, shards, piece + 1);
    float* dst = host_accumulator != nullptr ? host_accumulator + begin : buffers[p] + begin;
    for (int64_t i = 0; i < end - begin; ++i) {
      float sum = buffers[0][begin + i];
      for (int q = 1; q < n; ++q) sum += buffers[q][begin + i];
      dst[i] = divisor != 1.0f ? sum / divisor : sum;
    }
  }
  team.Barrier();
  // Broadcast: everyone copies each reduced piece it does not already hold.
  for (int piece = 0; piece < shards; ++piece) {
    const int reducer = reducer_of(piece);
    if (host_accumulator == nullptr && reducer == p) continue;
    const int64_t begin = PartBegin(num_elements, shards, piece);
    const int64_t end = PartBegin(num_elements, shards, piece + 1);
    const float* src =
        host_accumulator != nullptr ? host_accumulator + begin : buffers[reducer] + begin;
    CopyElements(buffers[p] + begin, src, end - begin);
  }
}

}  // namespace stepscope::parallel
