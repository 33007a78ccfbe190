// `mpirun -np 2 stepscope-train --devices cpu:1` must train exactly as one process with
// `--devices cpu:2`: same global batch split the same way, parameters broadcast from rank 0,
// gradients summed over ranks by MPI (a sum of two is exact in either order), sparse embedding
// rows gathered from both ranks. Compared: every step's loss and per-tower losses from the
// metrics files, and each rank's profiled trace (its own file, worker/task device names).
// Three ranks against `--devices cpu:3` too: a rank count that divides nothing evenly.
#include <gtest/gtest.h>

#include <cmath>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/formats/reader.h"
#include "tests/test_util.h"

namespace stepscope {
namespace {

std::vector<nlohmann::json> ReadSteps(const std::string& path) {
  std::vector<nlohmann::json> steps;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (!j.contains("summary")) steps.push_back(std::move(j));
  }
  return steps;
}

int RunCommand(const std::string& command) {
  const int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// `mpirun -np <ranks> ... --devices cpu:1` against one process with `--devices cpu:<ranks>`.
void ExpectRanksTrainAsDevicesInOneProcess(int ranks) {
  const std::string n = std::to_string(ranks);
  const std::string dir = testing::ScratchDir("mpi_trainer_" + n).string();
  const std::string common = std::string(STEPSCOPE_TRAIN_BINARY) +
                             " --model lstm --config small --batch_size 4 --steps 4"
                             " --warmup_steps 1 --seed 5";
  ASSERT_EQ(RunCommand(common + " --devices cpu:" + n + " --metrics " + dir + "/one_process.jsonl"), 0);
  ASSERT_EQ(RunCommand(std::string(STEPSCOPE_MPIEXEC) +
                " --oversubscribe --allow-run-as-root -np " + n + " " + common +
                " --devices cpu:1 --profile --profile_steps 2 --profile_dir " + dir +
                "/traces --metrics " + dir + "/ranks.jsonl"),
            0);
  const auto one = ReadSteps(dir + "/one_process.jsonl");
  const auto many = ReadSteps(dir + "/ranks.jsonl");
  ASSERT_EQ(one.size(), 4u);
  ASSERT_EQ(many.size(), 4u);  // rank 0 alone writes the metrics
  for (size_t s = 0; s < one.size(); ++s) {
    const double a = one[s]["loss"], b = many[s]["loss"];
    // Losses travel between ranks as floats: equal to float precision.
    EXPECT_NEAR(a, b, 1e-5 * std::abs(a)) << "step " << s + 1;
    ASSERT_EQ(many[s]["device_losses"].size(), static_cast<size_t>(ranks));
    for (size_t t = 0; t < static_cast<size_t>(ranks); ++t) {
      const double ta = one[s]["device_losses"][t], tb = many[s]["device_losses"][t];
      EXPECT_NEAR(ta, tb, 1e-5 * std::abs(ta)) << "step " << s + 1 << " tower " << t;
    }
  }
  // Later steps see the updated parameters: a different loss, so the updates really matched.
  EXPECT_NE(static_cast<double>(one[0]["loss"]), static_cast<double>(one[3]["loss"]));

  for (int rank = 0; rank < ranks; ++rank) {
    const std::string path = dir + "/traces/lstm_small_step2_rank" + std::to_string(rank) + ".pb";
    auto trace = trace::ReadTrace(path);
    ASSERT_TRUE(trace.ok()) << path << ": " << trace.status().message();
    EXPECT_EQ(trace->step_info().rank, rank);
    EXPECT_NE(trace->step_info().clock_sync_ns, 0);
    bool worker_device = false;
    for (const trace::Track& track : trace->tracks()) {
      worker_device |= trace->str(track.full_name)
                           .find("/job:worker/replica:0/task:" + std::to_string(rank) +
                                 "/device:CPU:0") != std::string::npos;
    }
    EXPECT_TRUE(worker_device) << path;
  }
}

TEST(MpiTrainerTest, TwoRanksTrainAsTwoDevicesInOneProcess) { ExpectRanksTrainAsDevicesInOneProcess(2); }

TEST(MpiTrainerTest, ThreeRanksTrainAsThreeDevicesInOneProcess) { ExpectRanksTrainAsDevicesInOneProcess(3); }

}  // namespace
}  // namespace stepscope
