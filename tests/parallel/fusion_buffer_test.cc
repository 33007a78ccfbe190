// The fusion buffer: gradients handed in from several tower threads in varying order are each
// reduced exactly once and correctly, for several threshold and cycle settings, and the three
// Horovod phases are reported.
#include "trainer/parallel/fusion_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "tests/parallel/parallel_test_util.h"

namespace stepscope::parallel {
namespace {

using testing::GradientSet;
using testing::MixedSizes;
using testing::RecordingObserver;

std::unique_ptr<FusionBuffer> MakeFusion(const std::string& spec_text, int participants,
                                         FusionOptions fusion, AllReduceOptions options = {}) {
  auto spec = ParseAllReduceSpec(spec_text);
  EXPECT_TRUE(spec.ok());
  auto buffer = FusionBuffer::Create(*spec, participants, options, fusion);
  EXPECT_TRUE(buffer.ok()) << buffer.status().message();
  return buffer.ok() ? std::move(*buffer) : nullptr;
}

// Each participant's tower thread hands in its gradients in reverse order (as backward produces
// them), with small pauses so batches form at different points.
void HandInFromTowers(FusionBuffer& fusion, GradientSet& set, int participants, uint32_t seed) {
  std::vector<std::thread> towers;
  std::vector<Status> statuses(participants);
  for (int p = 0; p < participants; ++p) {
    towers.emplace_back([&, p] {
      std::mt19937 rng(seed + p);
      for (size_t t = set.size(); t-- > 0;) {
        auto& buffer = set.buffer(t, p);
        Status status = fusion.Ready(p, set.gradients()[t].name, buffer);
        if (!status.ok() && statuses[p].ok()) statuses[p] = status;
        if (rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      }
    });
  }
  for (auto& tower : towers) tower.join();
  for (const Status& status : statuses) ASSERT_TRUE(status.ok()) << status.message();
}

TEST(FusionBufferTest, EveryGradientReducedExactlyOnceForSeveralSettings) {
  struct Setting {
    int64_t threshold_bytes;
    double cycle_ms;
    const char* spec;
  };
  const std::vector<Setting> settings = {
      {int64_t{64} << 20, 1.0, "ring"},   // everything fits: few batches
      {4096, 0.0, "ring#2"},              // small buffer, no waiting
      {100000, 5.0, "pscpu:1k:ring"},     // medium buffer, Horovod's older cycle
      {0, 1.0, "psgpu#2"},                // fusion off: every gradient alone
      {1 << 20, 0.2, "ring/mpi"},
  };
  for (int participants : {2, 3, 4}) {
    for (const Setting& setting : settings) {
      SCOPED_TRACE(std::string(setting.spec) + " threshold=" +
                   std::to_string(setting.threshold_bytes) + " cycle=" +
                   std::to_string(setting.cycle_ms) + " N=" + std::to_string(participants));
      RecordingObserver observer;
      AllReduceOptions options;
      options.observer = &observer;
      auto fusion = MakeFusion(setting.spec, participants,
                               {setting.threshold_bytes, setting.cycle_ms}, options);
      ASSERT_NE(fusion, nullptr);
      for (int step = 0; step < 2; ++step) {
        GradientSet set(MixedSizes(), participants, 1000u * step + participants);
        HandInFromTowers(*fusion, set, participants, 7u * step);
        ASSERT_TRUE(fusion->Synchronize().ok());
        // Reduced exactly once: twice would double the values, never would leave them alone.
        ASSERT_TRUE(set.Reduced());
      }
      // Each gradient appears in exactly one ALLREDUCE per step.
      std::map<std::string, int> reduced;
      int copies_in = 0, copies_out = 0;
      for (const CollectiveEvent& event : observer.events) {
        if (event.phase == CollectivePhase::kAllReduce) {
          for (const auto& name : event.tensors) ++reduced[name];
        }
        if (event.phase == CollectivePhase::kMemcpyInFusionBuffer) ++copies_in;
        if (event.phase == CollectivePhase::kMemcpyOutFusionBuffer) ++copies_out;
        EXPECT_LE(event.start_ns, event.end_ns);
        EXPECT_EQ(event.peers, participants);
      }
      EXPECT_EQ(reduced.size(), MixedSizes().size());
      for (const auto& [name, count] : reduced) EXPECT_EQ(count, 2) << name;
      EXPECT_EQ(copies_in, copies_out);
      if (setting.threshold_bytes == 0) {
        EXPECT_EQ(copies_in, 0);
      }
      if (setting.threshold_bytes == int64_t{64} << 20) {
        EXPECT_GT(copies_in, 0);  // with a large buffer gradients are fused
        EXPECT_LT(fusion->batches_reduced(), 2 * static_cast<int64_t>(MixedSizes().size()));
      }
    }
  }
}

TEST(FusionBufferTest, FusedBatchReportsThePhasesInOrder) {
  RecordingObserver observer;
  AllReduceOptions options;
  options.observer = &observer;
  // A long cycle: the batch goes out when Synchronize asks for it, all in one.
  auto fusion = MakeFusion("ring", 2, {1 << 20, 10'000.0}, options);
  GradientSet set({10, 20, 30}, 2, 3u);
  for (int p = 0; p < 2; ++p) {
    for (size_t t = 0; t < set.size(); ++t) {
      ASSERT_TRUE(fusion->Ready(p, set.gradients()[t].name, set.buffer(t, p)).ok());
    }
  }
  ASSERT_TRUE(fusion->Synchronize().ok());
  ASSERT_TRUE(set.Reduced());
  ASSERT_EQ(observer.events.size(), 3u);
  EXPECT_EQ(CollectivePhaseName(observer.events[0].phase), "MEMCPY_IN_FUSION_BUFFER");
  EXPECT_EQ(CollectivePhaseName(observer.events[1].phase), "ALLREDUCE");
  EXPECT_EQ(CollectivePhaseName(observer.events[2].phase), "MEMCPY_OUT_FUSION_BUFFER");
  EXPECT_EQ(observer.events[1].algorithm, "ring");
  EXPECT_EQ(observer.events[1].bytes, 240);
  EXPECT_EQ(observer.events[1].tensors.size(), 3u);
  EXPECT_LE(observer.events[0].end_ns, observer.events[1].start_ns);
  EXPECT_LE(observer.events[1].end_ns, observer.events[2].start_ns);
  EXPECT_EQ(fusion->batches_reduced(), 1);
  EXPECT_EQ(observer.events[1].name, "HorovodAllreduce_fused_0");
  // Each copy phase carries every participant's own copy time, inside the phase's span.
  for (size_t e : {size_t{0}, size_t{2}}) {
    const CollectiveEvent& copy = observer.events[e];
    ASSERT_EQ(copy.participant_times.size(), 2u);
    for (const auto& [start, end] : copy.participant_times) {
      EXPECT_LE(copy.start_ns, start);
      EXPECT_LE(start, end);
      EXPECT_LE(end, copy.end_ns);
    }
  }
  EXPECT_TRUE(observer.events[1].participant_times.empty());
}

TEST(FusionBufferTest, FullBufferGoesOutWithoutWaitingForTheCycle) {
  // 10 s cycle, 400-byte buffer: batches must leave because the buffer fills, so Synchronize
  // returns long before any cycle ends.
  auto fusion = MakeFusion("ring", 2, {400, 10'000.0});
  GradientSet set(std::vector<int64_t>(20, 25), 2, 9u);
  const auto start = std::chrono::steady_clock::now();
  for (size_t t = 0; t < set.size(); ++t) {
    for (int p = 0; p < 2; ++p) {
      ASSERT_TRUE(fusion->Ready(p, set.gradients()[t].name, set.buffer(t, p)).ok());
    }
  }
  ASSERT_TRUE(fusion->Synchronize().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(set.Reduced());
  EXPECT_EQ(fusion->batches_reduced(), 5);  // 4 gradients of 100 bytes per 400-byte batch
}

TEST(FusionBufferTest, BadHandInsAreErrors) {
  auto fusion = MakeFusion("ring", 2, {});
  std::vector<float> a(4, 1.0f), b(5, 1.0f), c(4, 2.0f);
  EXPECT_EQ(fusion->Ready(2, "w", a).code(), StatusCode::kInvalidInput);
  ASSERT_TRUE(fusion->Ready(0, "w", a).ok());
  EXPECT_EQ(fusion->Ready(0, "w", a).code(), StatusCode::kInvalidInput);  // twice
  EXPECT_EQ(fusion->Ready(1, "w", b).code(), StatusCode::kInvalidInput);  // other length
  ASSERT_TRUE(fusion->Ready(0, "only_on_0", c).ok());
  Status status = fusion->Synchronize();
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_NE(status.message().find("'w' (1 of 2)"), std::string::npos) << status.message();
  // The next step starts clean.
  std::vector<float> x(3, 1.0f), y(3, 2.0f);
  ASSERT_TRUE(fusion->Ready(0, "w", x).ok());
  ASSERT_TRUE(fusion->Ready(1, "w", y).ok());
  ASSERT_TRUE(fusion->Synchronize().ok());
  EXPECT_EQ(x, std::vector<float>(3, 3.0f));
  EXPECT_EQ(y, std::vector<float>(3, 3.0f));

  auto spec = ParseAllReduceSpec("ring");
  EXPECT_FALSE(FusionBuffer::Create(*spec, 2, {}, {-1, 1.0}).ok());
  EXPECT_FALSE(FusionBuffer::Create(*spec, 2, {}, {100, -1.0}).ok());
}

}  // namespace
}  // namespace stepscope::parallel
