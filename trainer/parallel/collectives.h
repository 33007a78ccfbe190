// The in-process collectives, written as the share of one participant: every participant of a
// ParticipantTeam job calls the same function with its own index, and the functions meet at the
// team's step barriers. Each reduced value is computed once, by one participant, and copied to
// the others, so every participant ends with exactly the same bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "trainer/parallel/participant_team.h"

namespace stepscope::parallel {

enum class ReduceOp { kSum, kMean };

// Ring all-reduce of buffers[q][0, num_elements) for every participant q: reduce-scatter then
// all-gather, N - 1 steps each. `shards` rings each take 1/shards of the buffer (odd-numbered rings
// run in the opposite direction); the buffer streams through in segments of
// `chunk_elements` per participant and ring so large buffers never need one huge step.
// `divisor` > 1 divides each reduced value once, before it is gathered (the mean).
void RingAllReduceShare(ParticipantTeam& team, int participant, std::span<float* const> buffers,
                        int64_t num_elements, int shards, int64_t chunk_elements, float divisor);

// Parameter-server all-reduce: the buffer is cut into `shards` pieces; piece j is summed (in
// participant order) by reducer (first_reducer + j) % N, then every participant copies it.
// With `host_accumulator` (pscpu) the sum lands there, like a copy to host memory; without it
// (psgpu) it lands in the reducer's own buffer.
void ParameterServerAllReduceShare(ParticipantTeam& team, int participant,
                                   std::span<float* const> buffers, int64_t num_elements,
                                   int shards, int first_reducer, float* host_accumulator,
                                   float divisor);

}  // namespace stepscope::parallel
