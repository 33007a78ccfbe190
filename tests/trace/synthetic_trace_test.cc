// The generated trace of `stepscope-view --synthetic N` is a fixed function of N and the seed:
// the digests below were taken from the generator's first, single-threaded form, so a faster
// generator (its second pass split over threads) must still give every slice, flow and
// memory sample it gave.
#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>

#include "profiler/testing/synthetic_trace.h"

namespace stepscope::synthetic {
namespace {

// FNV-1a over every slice (times, track, depth, kind, label, name, op type), flow and counter
// sample.
class TraceDigest {
 public:
  explicit TraceDigest(const trace::Trace& trace) {
    Mix(static_cast<uint64_t>(trace.epoch_ns()));
    Mix(trace.tracks().size());
    for (const trace::Slice& packed : trace.slices()) {
      const trace::SliceRecord s = trace.Record(packed);
      Mix(static_cast<uint64_t>(s.start_ns));
      Mix(static_cast<uint64_t>(s.dur_ns));
      Mix(s.track);
      Mix(s.depth);
      Mix(static_cast<uint64_t>(s.kind));
      Mix(packed.label);  // labels interned in the same order
      MixText(trace.strings().Get(s.name));
      MixText(trace.strings().Get(s.op_type));
    }
    for (const trace::Flow& flow : trace.flows()) {
      Mix(flow.from_slice);
      Mix(flow.to_slice);
      Mix(static_cast<uint64_t>(flow.kind));
    }
    for (const trace::CounterSeries& counter : trace.counters()) {
      MixText(trace.strings().Get(counter.name));
      for (int64_t ts : counter.ts_ns) Mix(static_cast<uint64_t>(ts));
      for (double value : counter.values) Mix(static_cast<uint64_t>(value));
    }
  }
  uint64_t value() const { return hash_; }

 private:
  void Mix(uint64_t word) {
    for (int i = 0; i < 8; ++i) {
      hash_ ^= (word >> (8 * i)) & 0xff;
      hash_ *= 0x100000001b3ull;
    }
  }
  void MixText(std::string_view text) {
    Mix(text.size());
    for (char c : text) {
      hash_ ^= static_cast<uint8_t>(c);
      hash_ *= 0x100000001b3ull;
    }
  }
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

uint64_t DigestOf(int64_t slices, uint64_t seed, bool allocator) {
  return TraceDigest(MakeSyntheticTrace(slices, seed, allocator)).value();
}

TEST(SyntheticTraceTest, SmallTracesAreTheSameAsEver) {
  EXPECT_EQ(DigestOf(1, 1, false), 1702714206828898662u) << "1 slice";
  EXPECT_EQ(DigestOf(1000, 1, true), 8479736239692363300u) << "1000 slices, memory";
  EXPECT_EQ(DigestOf(12345, 7, false), 2486350035435345949u) << "12345 slices, seed 7";
}

// Past the size at which the second pass is split over threads, in pieces of any alignment.
TEST(SyntheticTraceTest, LargeTracesAreTheSameAsEver) {
  EXPECT_EQ(DigestOf(3'000'001, 1, true), 15529639151711793703u) << "3000001 slices, memory";
}

}  // namespace
}  // namespace stepscope::synthetic
