// The BLAS thread count per GEMM call: the policy for one or several devices, the environment
// variables OpenBLAS honours (which must win), and that the count really reaches OpenBLAS.
// A program of its own: it changes process-wide state (the environment, OpenBLAS's threads).
#include "kernels/blas_threads.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernels/cpu_context.h"
#include "kernels/matmul.h"

namespace stepscope::kernels {
namespace {

constexpr const char* kVariables[] = {"OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS",
                                      "OMP_NUM_THREADS"};

// Clears the three variables for one test and puts back what the process had.
class BlasEnvironment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* variable : kVariables) {
      const char* value = std::getenv(variable);
      saved_.push_back(value ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(variable);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < saved_.size(); ++i) {
      if (saved_[i]) {
        setenv(kVariables[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kVariables[i]);
      }
    }
  }

 private:
  std::vector<std::optional<std::string>> saved_;
};

TEST(BlasThreadsPerCall, OneDeviceKeepsItsThreadsSeveralGetOneEach) {
  EXPECT_EQ(BlasThreadsPerCall(1, 1), 1);
  EXPECT_EQ(BlasThreadsPerCall(1, 2), 2);
  EXPECT_EQ(BlasThreadsPerCall(1, 16), 16);
  EXPECT_EQ(BlasThreadsPerCall(1, 0), 1);  // a budget below one still runs
  EXPECT_EQ(BlasThreadsPerCall(2, 1), 1);
  EXPECT_EQ(BlasThreadsPerCall(4, 1), 1);
  // Several devices with cores to spare: OpenBLAS would serialize their threaded GEMMs.
  EXPECT_EQ(BlasThreadsPerCall(2, 8), 1);
}

TEST_F(BlasEnvironment, ReadsTheVariablesInOpenBlasOrder) {
  EXPECT_EQ(BlasThreadsFromEnvironment(), 0);
  setenv("OMP_NUM_THREADS", "3", 1);
  EXPECT_EQ(BlasThreadsFromEnvironment(), 3);
  setenv("GOTO_NUM_THREADS", "2", 1);
  EXPECT_EQ(BlasThreadsFromEnvironment(), 2);
  setenv("OPENBLAS_NUM_THREADS", "5", 1);
  EXPECT_EQ(BlasThreadsFromEnvironment(), 5);
  // Values OpenBLAS ignores fall through to the next variable.
  setenv("OPENBLAS_NUM_THREADS", "0", 1);
  setenv("GOTO_NUM_THREADS", "many", 1);
  EXPECT_EQ(BlasThreadsFromEnvironment(), 3);
  setenv("OMP_NUM_THREADS", "-4", 1);
  EXPECT_EQ(BlasThreadsFromEnvironment(), 0);
}

TEST_F(BlasEnvironment, ConfigureSetsOpenBlasForTheDeviceCount) {
  EXPECT_EQ(ConfigureBlasThreads(1, 3), 3);
  EXPECT_EQ(BlasThreads(), 3);
  EXPECT_EQ(ConfigureBlasThreads(2, 1), 1);
  EXPECT_EQ(BlasThreads(), 1);
  EXPECT_EQ(ConfigureBlasThreads(4, 1), 1);
  EXPECT_EQ(ConfigureBlasThreads(1, 2), 2);
  EXPECT_EQ(BlasThreads(), 2);
}

TEST_F(BlasEnvironment, AnExplicitEnvironmentCountWins) {
  ASSERT_EQ(ConfigureBlasThreads(1, 3), 3);
  setenv("OPENBLAS_NUM_THREADS", "3", 1);
  // The user asked for 3: two devices do not bring it down to one.
  EXPECT_EQ(ConfigureBlasThreads(2, 1), 3);
  EXPECT_EQ(BlasThreads(), 3);
  unsetenv("OPENBLAS_NUM_THREADS");
  EXPECT_EQ(ConfigureBlasThreads(2, 1), 1);
}

// Two threads multiplying at once with one BLAS thread each, as two towers do, both get the
// product a plain loop gives.
TEST_F(BlasEnvironment, ConcurrentCallersWithOneThreadEachGetCorrectProducts) {
  ASSERT_EQ(ConfigureBlasThreads(2, 1), 1);
  constexpr int64_t kN = 96;
  std::vector<float> a(kN * kN), b(kN * kN), expected(kN * kN, 0.0f);
  for (int64_t i = 0; i < kN * kN; ++i) {
    a[i] = static_cast<float>(i % 7) - 3.0f;
    b[i] = static_cast<float>(i % 5) - 2.0f;
  }
  for (int64_t i = 0; i < kN; ++i) {
    for (int64_t k = 0; k < kN; ++k) {
      for (int64_t j = 0; j < kN; ++j) expected[i * kN + j] += a[i * kN + k] * b[k * kN + j];
    }
  }
  std::vector<std::vector<float>> results(2, std::vector<float>(kN * kN));
  std::vector<int> failed_calls(2, 0);
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t) {
    callers.emplace_back([&, t] {
      CpuContext serial;
      for (int round = 0; round < 20; ++round) {
        const Status status = MatMul<float>(serial, {a.data(), {kN, kN}}, {b.data(), {kN, kN}},
                                            {results[t].data(), {kN, kN}});
        if (!status.ok()) ++failed_calls[t];
      }
    });
  }
  for (std::thread& caller : callers) caller.join();
  EXPECT_EQ(failed_calls, std::vector<int>({0, 0}));
  // Small integers: every partial sum is exact, so the products must be equal.
  EXPECT_EQ(results[0], expected);
  EXPECT_EQ(results[1], expected);
}

}  // namespace
}  // namespace stepscope::kernels
