// The CUPTI detach protocol (api_exit_detach.h) with its four calls played by the test, as CUPTI
// would play them: the trigger call's exit runs OnApiExit on the calling thread, other threads'
// exits run it on theirs. cuptiFinalize itself needs a GPU (trainer_gpu_step_tracer_integration
// _test runs the real one while another thread launches kernels).
#include "profiler/collect/cupti/api_exit_detach.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace stepscope::collect::cupti {
namespace {

// Counts what the protocol asked for.
struct CallCounts {
  std::atomic<int> arm{0}, trigger{0}, finalize{0}, disarm{0};
};

// Calls whose trigger's exit reaches the callback on the same thread, as CUPTI does when the
// callback is armed; `finalize_result` is what cuptiFinalize answers.
DetachCalls CallsWithCallback(ApiExitDetach** self, CallCounts* counts,
                              Status finalize_result = Status::Ok()) {
  return {.arm = [counts] { ++counts->arm; return Status::Ok(); },
          .trigger = [self, counts] { ++counts->trigger; (*self)->OnApiExit(); },
          .finalize = [counts, finalize_result] { ++counts->finalize; return finalize_result; },
          .disarm = [counts] { ++counts->disarm; }};
}

TEST(ApiExitDetachTest, FinalizesAtTheExitOfItsOwnCallEveryTime) {
  CallCounts counts;
  ApiExitDetach* self = nullptr;
  ApiExitDetach detach(CallsWithCallback(&self, &counts));
  self = &detach;
  EXPECT_EQ(detach.last_outcome(), DetachOutcome::kNone);
  for (int round = 1; round <= 3; ++round) {  // attached again by each Resume, detached again
    ASSERT_TRUE(detach.Detach().ok());
    EXPECT_EQ(detach.last_outcome(), DetachOutcome::kOnThisThread);
    EXPECT_EQ(counts.arm, round);
    EXPECT_EQ(counts.trigger, round);
    EXPECT_EQ(counts.finalize, round);
  }
  EXPECT_EQ(counts.disarm, 0) << "a finalize ends the subscription itself";
  detach.OnApiExit();  // an exit after the detach (a callback already under way) does nothing
  EXPECT_EQ(counts.finalize, 3);
}

TEST(ApiExitDetachTest, AnotherThreadsExitFinalizesAndTheDetachWaitsForIt) {
  CallCounts counts;
  ApiExitDetach* self = nullptr;
  std::atomic<bool> armed{false}, finalizing{false}, own_exit_returned{false}, finalized{false};
  std::thread other;  // an NCCL proxy, say, leaving a CUDA call just after the callback is armed
  ApiExitDetach detach(DetachCalls{
      .arm =
          [&] {
            armed = true;
            return Status::Ok();
          },
      .trigger =
          [&] {
            while (!finalizing) std::this_thread::yield();
            self->OnApiExit();  // claimed already: returns at once, never waits in a callback
            own_exit_returned = true;
          },
      .finalize =
          [&] {
            finalizing = true;
            // cuptiFinalize on the other thread outlasts the detaching thread's own call.
            while (!own_exit_returned) std::this_thread::yield();
            ++counts.finalize;
            finalized = true;
            return Status::Ok();
          },
      .disarm = [&] { ++counts.disarm; }});
  self = &detach;
  other = std::thread([&] {
    while (!armed) std::this_thread::yield();
    self->OnApiExit();
  });
  const Status status = detach.Detach();
  EXPECT_TRUE(finalized) << "Detach returned before the other thread's finalize ended";
  other.join();
  ASSERT_TRUE(status.ok()) << status.message();
  EXPECT_EQ(detach.last_outcome(), DetachOutcome::kOnAnotherThread);
  EXPECT_EQ(counts.finalize, 1);
  EXPECT_EQ(counts.disarm, 0);
}

TEST(ApiExitDetachTest, NoCallbackLeavesCuptiAttachedAndDisarmed) {
  CallCounts counts;
  ApiExitDetach detach(DetachCalls{.arm = [&] { ++counts.arm; return Status::Ok(); },
                                   .trigger = [&] { ++counts.trigger; },  // no exit reported
                                   .finalize = [&] { ++counts.finalize; return Status::Ok(); },
                                   .disarm = [&] { ++counts.disarm; }});
  const Status status = detach.Detach();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("callback did not run"), std::string::npos) << status.message();
  EXPECT_EQ(detach.last_outcome(), DetachOutcome::kNoCallback);
  EXPECT_EQ(counts.disarm, 1);
  detach.OnApiExit();  // a late exit finds nothing armed
  EXPECT_EQ(counts.finalize, 0);
}

TEST(ApiExitDetachTest, RefusedSubscriptionIsReportedAndNothingIsCalled) {
  CallCounts counts;
  ApiExitDetach detach(DetachCalls{
      .arm = [&] {
        ++counts.arm;
        return Unavailable("CUPTI call cuptiSubscribe_v2 failed: another subscriber (Nsight)");
      },
      .trigger = [&] { ++counts.trigger; },
      .finalize = [&] { ++counts.finalize; return Status::Ok(); },
      .disarm = [&] { ++counts.disarm; }});
  const Status status = detach.Detach();
  EXPECT_EQ(status.code(), StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("Nsight"), std::string::npos);
  EXPECT_EQ(detach.last_outcome(), DetachOutcome::kNotArmed);
  EXPECT_EQ(counts.trigger, 0);
  EXPECT_EQ(counts.finalize, 0);
  EXPECT_EQ(counts.disarm, 1) << "a half-made subscription is ended";
}

TEST(ApiExitDetachTest, FailedFinalizeIsReturnedAndDisarmed) {
  CallCounts counts;
  ApiExitDetach* self = nullptr;
  ApiExitDetach detach(
      CallsWithCallback(&self, &counts, Internal("CUPTI call cuptiFinalize() failed")));
  self = &detach;
  const Status status = detach.Detach();
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(detach.last_outcome(), DetachOutcome::kFinalizeFailed);
  EXPECT_EQ(counts.finalize, 1);
  EXPECT_EQ(counts.disarm, 1);
  ASSERT_TRUE(detach.Detach().code() == StatusCode::kInternal) << "a later detach tries again";
  EXPECT_EQ(counts.finalize, 2);
}

TEST(ApiExitDetachTest, ManyThreadsLeavingCallsFinalizeOnceADetach) {
  CallCounts counts;
  ApiExitDetach* self = nullptr;
  ApiExitDetach detach(CallsWithCallback(&self, &counts));
  self = &detach;
  std::atomic<bool> stop{false};
  std::vector<std::thread> callers;  // threads inside CUDA all the time, as fusion threads are
  for (int i = 0; i < 6; ++i) {
    callers.emplace_back([&] {
      while (!stop) self->OnApiExit();
    });
  }
  constexpr int kDetaches = 300;
  for (int i = 0; i < kDetaches; ++i) {
    ASSERT_TRUE(detach.Detach().ok());
    ASSERT_EQ(counts.finalize, i + 1);  // whichever thread's exit came first, exactly once
  }
  stop = true;
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(counts.finalize, kDetaches);
  EXPECT_EQ(counts.disarm, 0);
}

}  // namespace
}  // namespace stepscope::collect::cupti
