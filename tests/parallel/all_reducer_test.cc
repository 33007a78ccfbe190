// Every in-process algorithm, spec with size ranges and packing setting reduces odd sizes and
// many small tensors to the double-precision reference, identically on every participant, for
// N = 1..4; plus the mean, the observer events and the errors.
#include "trainer/parallel/all_reducer.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>

#include "tests/parallel/parallel_test_util.h"

namespace stepscope::parallel {
namespace {

using testing::GradientSet;
using testing::MixedSizes;
using testing::RecordingObserver;

std::unique_ptr<AllReducer> MakeReducer(const std::string& spec_text, int participants,
                                        AllReduceOptions options = {}) {
  auto spec = ParseAllReduceSpec(spec_text);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  auto reducer = AllReducer::Create(*spec, participants, options);
  EXPECT_TRUE(reducer.ok()) << reducer.status().message();
  return reducer.ok() ? std::move(*reducer) : nullptr;
}

struct Setting {
  std::string spec;
  int64_t pack_max_bytes = 0;
  int pack_max_group = 0;
  int64_t ring_chunk_bytes = int64_t{1} << 20;
};

std::string SettingName(const Setting& setting, int participants) {
  return setting.spec + " pack=" + std::to_string(setting.pack_max_bytes) + "/" +
         std::to_string(setting.pack_max_group) + " chunk=" +
         std::to_string(setting.ring_chunk_bytes) + " N=" + std::to_string(participants);
}

const std::vector<Setting>& AllSettings() {
  static const std::vector<Setting> settings = {
      {"ring"},
      {"xring#2"},
      {"ring#3", 0, 0, 64},  // tiny chunks: many streamed segments
      {"collective"},
      {"pscpu"},
      {"pscpu#3"},
      {"psgpu"},
      {"psgpu#4"},
      {"mpi"},  // one process: the ring within it
      {"ring/mpi"},
      {"psgpu#2/pscpu"},
      {"pscpu:64:ring#2:4K:psgpu#2"},
      {"psgpu:1k:ring", 1024, 8},
      {"ring", 4096, 100},
      {"pscpu:100:ring#2", 400, 1},
  };
  return settings;
}

TEST(AllReducerTest, EveryAlgorithmSumsToTheReferenceOnEveryParticipant) {
  for (int participants = 1; participants <= 4; ++participants) {
    for (const Setting& setting : AllSettings()) {
      SCOPED_TRACE(SettingName(setting, participants));
      AllReduceOptions options;
      options.agg_small_grads_max_bytes = setting.pack_max_bytes;
      options.agg_small_grads_max_group = setting.pack_max_group;
      options.ring_chunk_bytes = setting.ring_chunk_bytes;
      auto reducer = MakeReducer(setting.spec, participants, options);
      ASSERT_NE(reducer, nullptr);
      GradientSet set(MixedSizes(), participants, 17u + participants);
      ASSERT_TRUE(reducer->AllReduce(set.gradients()).ok());
      EXPECT_TRUE(set.Reduced());
    }
  }
}

TEST(AllReducerTest, MeanDividesBySizeOnce) {
  for (int participants : {2, 3, 4}) {
    for (const char* spec : {"ring#2", "pscpu", "psgpu#3", "ring/mpi"}) {
      SCOPED_TRACE(std::string(spec) + " N=" + std::to_string(participants));
      AllReduceOptions options;
      options.op = ReduceOp::kMean;
      auto reducer = MakeReducer(spec, participants, options);
      GradientSet set(MixedSizes(), participants, 5u);
      ASSERT_TRUE(reducer->AllReduce(set.gradients()).ok());
      EXPECT_TRUE(set.Reduced(1.0 / participants));
    }
  }
}

TEST(AllReducerTest, RepeatedCallsReuseTheTeam) {
  auto reducer = MakeReducer("pscpu:16:ring", 3);
  for (int step = 0; step < 20; ++step) {
    GradientSet set({5, 17, 300, 1}, 3, 100u + step);
    ASSERT_TRUE(reducer->AllReduce(set.gradients()).ok());
    ASSERT_TRUE(set.Reduced()) << "step " << step;
  }
}

TEST(AllReducerTest, ObserverSeesEachCollectiveWithBytesAlgorithmAndPeers) {
  RecordingObserver observer;
  AllReduceOptions options;
  options.observer = &observer;
  options.agg_small_grads_max_bytes = 16;  // gradients 0..1 (<= 4 elements) are packed
  options.agg_small_grads_max_group = 4;
  auto reducer = MakeReducer("pscpu:100:ring#2", 2, options);
  GradientSet set({3, 4, 50, 1000}, 2, 1u);
  ASSERT_TRUE(reducer->AllReduce(set.gradients()).ok());
  ASSERT_TRUE(set.Reduced());
  ASSERT_EQ(observer.events.size(), 5u);
  EXPECT_EQ(observer.events[0].phase, CollectivePhase::kPack);
  EXPECT_EQ(observer.events[0].bytes, 28);
  EXPECT_EQ(observer.events[1].name, "AllReduce/packed_0_1");
  EXPECT_EQ(observer.events[1].algorithm, "pscpu");
  EXPECT_EQ(observer.events[1].tensors,
            (std::vector<std::string>{"tower/grad_0", "tower/grad_1"}));
  EXPECT_EQ(observer.events[2].name, "AllReduce/tower/grad_2");
  EXPECT_EQ(observer.events[2].algorithm, "pscpu");
  EXPECT_EQ(observer.events[3].algorithm, "ring#2");
  EXPECT_EQ(observer.events[3].bytes, 4000);
  EXPECT_EQ(observer.events[4].phase, CollectivePhase::kUnpack);
  for (const CollectiveEvent& event : observer.events) {
    EXPECT_EQ(event.peers, 2);
    EXPECT_LE(event.start_ns, event.end_ns);
    EXPECT_GT(event.start_ns, 0);
  }
  EXPECT_EQ(CollectivePhaseName(observer.events[1].phase), "ALLREDUCE");
}

TEST(AllReducerTest, ConcurrentCallersAreSerialized) {
  auto reducer = MakeReducer("ring#2", 3);
  std::vector<std::thread> callers;
  std::vector<int> ok(4, 0);
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&, c] {
      GradientSet set({1001, 7, 64}, 3, 300u + c);
      ok[c] = reducer->AllReduce(set.gradients()).ok() && set.Reduced();
    });
  }
  for (auto& caller : callers) caller.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

TEST(AllReducerTest, Errors) {
  auto spec = ParseAllReduceSpec("nccl");
  ASSERT_TRUE(spec.ok());
  auto nccl = AllReducer::Create(*spec, 2, {});
  ASSERT_FALSE(nccl.ok());
  EXPECT_EQ(nccl.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(nccl.status().message().find("nccl"), std::string::npos);
  EXPECT_FALSE(AllReducer::Create(*ParseAllReduceSpec("ring/nccl"), 2, {}).ok());
  EXPECT_EQ(AllReducer::Create(*ParseAllReduceSpec("ring"), 0, {}).status().code(),
            StatusCode::kInvalidInput);
  EXPECT_FALSE(AllReducer::Create(AllReduceSpec{}, 2, {}).ok());

  auto reducer = MakeReducer("ring", 3);
  GradientSet two(std::vector<int64_t>{8}, 2, 1u);
  Status status = reducer->AllReduce(two.gradients());
  EXPECT_EQ(status.code(), StatusCode::kInvalidInput);
  EXPECT_NE(status.message().find("tower/grad_0"), std::string::npos) << status.message();
  GradientSet three(std::vector<int64_t>{8}, 3, 1u);
  three.gradients()[0].replicas[1] = nullptr;
  EXPECT_EQ(reducer->AllReduce(three.gradients()).code(), StatusCode::kInvalidInput);
}

}  // namespace
}  // namespace stepscope::parallel
