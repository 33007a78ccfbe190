// Clock alignment on collectives (analysis/clock_align.h) on a real run: `mpirun -np 2
// stepscope-train --devices cpu:1 --profile` writes one step trace per rank and profiled step,
// each rank's all-reduce records and sparse-gradient gathers on its one clock (one host). Aligned
// on those, every rank agrees with the barrier (which on one host shifts nothing) within the
// residual and the spread of the barrier's exits; with a rank's clock moved by a known offset and drift in its files (every time its
// step stats record, the sync point too), the correction found undoes it within 1 µs + the
// residual.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/formats/inputs.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "tests/cli/run_stepscope.h"
#include "tests/test_util.h"

namespace stepscope {
namespace {

int RunCommand(const std::string& command) {
  const int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// A clock reading t + offset + drift (t - origin) at true time t (ns).
struct Shift {
  int64_t offset_ns = 0;
  double drift_ppm = 0;
  int64_t origin_ns = 0;
  int64_t At(int64_t t) const {
    return t == 0 ? 0 : t + offset_ns + std::llround(drift_ppm * 1e-6 * static_cast<double>(t - origin_ns));
  }
};

// Rewrites a step trace as the shifted clock would have written it.
void ShiftFile(const std::filesystem::path& path, const Shift& shift) {
  auto bytes = ReadFile(path.string());
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  tf::RunMetadata metadata;
  ASSERT_TRUE(metadata.ParseFromString(*bytes)) << path;
  auto* session = metadata.mutable_stepscope_session();
  session->set_clock_sync_nanos(shift.At(session->clock_sync_nanos()));
  for (auto& device : *metadata.mutable_step_stats()->mutable_dev_stats()) {
    for (auto& node : *device.mutable_node_stats()) {
      const int64_t start = node.all_start_nanos() != 0 ? node.all_start_nanos() : node.all_start_micros() * 1000;
      const int64_t end = start + (node.all_end_rel_nanos() != 0 ? node.all_end_rel_nanos() : node.all_end_rel_micros() * 1000);
      const int64_t op_end = start + (node.op_end_rel_nanos() != 0 ? node.op_end_rel_nanos() : node.op_end_rel_micros() * 1000);
      const int64_t moved = shift.At(start);
      node.set_all_start_nanos(moved);
      node.set_all_start_micros(moved / 1000);
      node.set_scheduled_nanos(shift.At(node.scheduled_nanos()));
      node.set_scheduled_micros(shift.At(node.scheduled_micros() * 1000) / 1000);
      node.set_all_end_rel_nanos(shift.At(end) - moved);
      node.set_all_end_rel_micros((shift.At(end) - moved) / 1000);
      node.set_op_end_rel_nanos(shift.At(op_end) - moved);
      node.set_op_end_rel_micros((shift.At(op_end) - moved) / 1000);
      node.set_op_start_rel_nanos(0);
      node.set_op_start_rel_micros(0);
      for (auto& memory : *node.mutable_memory()) {
        for (auto& record : *memory.mutable_allocation_records()) {
          record.set_alloc_micros(shift.At(record.alloc_micros() * 1000) / 1000);
        }
      }
    }
  }
  ASSERT_TRUE(WriteFileAtomically(path.string(), metadata.SerializeAsString()).ok());
}

nlohmann::json Align(const std::string& dir, const std::string& method) {
  const cli::CliResult result = cli::RunStepscope({"align", dir, "--json", "--align", method});
  EXPECT_EQ(result.code, 0) << result.err;
  return nlohmann::json::parse(result.out);
}

class AlignRunTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(stepscope::testing::ScratchDir("align_run").string());
    std::filesystem::remove_all(*dir_ + "/traces");
    ASSERT_EQ(RunCommand(std::string(STEPSCOPE_MPIEXEC) + " --oversubscribe --allow-run-as-root -np 2 " +
                         STEPSCOPE_TRAIN_BINARY +
                         " --model lstm --config small --batch_size 4 --steps 6 --warmup_steps 1 --seed 5"
                         " --devices cpu:1 --profile --profile_steps 2-5 --profile_dir " + *dir_ + "/traces"),
              0);
  }
  static std::string* dir_;
};
std::string* AlignRunTest::dir_ = nullptr;

TEST_F(AlignRunTest, CollectivesAgreeWithTheBarrierWithinTheirResidual) {
  const nlohmann::json collectives = Align(*dir_ + "/traces", "collectives");
  const nlohmann::json barrier = Align(*dir_ + "/traces", "barrier");
  EXPECT_EQ(collectives["schema"], "stepscope.align/1");
  ASSERT_EQ(collectives["method"], "collectives") << collectives["notes"];
  EXPECT_EQ(barrier["method"], "barrier");
  ASSERT_EQ(collectives["ranks"].size(), 2u);
  // The barrier's own uncertainty: on one clock, how far apart the ranks left it (each rank's
  // sync point).
  std::map<int32_t, int64_t> sync;
  auto traces = trace::ReadTraces({*dir_ + "/traces"});
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  for (const trace::Trace& t : *traces) sync[t.step_info().rank] = t.step_info().clock_sync_ns;
  ASSERT_EQ(sync.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    const auto& c = collectives["ranks"][r];
    EXPECT_EQ(c["rank"], r);
    // 6 all-reduces (one per dense variable) and the sparse gradients' gather in each of the 4 steps.
    EXPECT_EQ(c["matched_collectives"], 28) << "rank " << r;
    const int64_t barrier_spread = std::abs(sync.at(0) - sync.at(static_cast<int32_t>(r)));
    EXPECT_LE(std::abs(c["offset_ns"].get<int64_t>() - barrier["ranks"][r]["offset_ns"].get<int64_t>()),
              c["residual_ns"].get<int64_t>() + barrier_spread + 1000)
        << "rank " << r << ", the barrier's exits " << barrier_spread << " ns apart";
  }
}

TEST_F(AlignRunTest, RecoversAShiftedAndDriftingRank) {
  const nlohmann::json before = Align(*dir_ + "/traces", "collectives");
  const std::string moved = *dir_ + "/moved";
  std::filesystem::remove_all(moved);
  std::filesystem::copy(*dir_ + "/traces", moved);
  // Rank 1's clock reads 1.7 s late and gains 300 ppm (90 µs over the run's 0.3 s).
  Shift shift{-1700000000, 300, before["ranks"][1]["anchor_ns"].get<int64_t>()};
  for (const auto& entry : std::filesystem::directory_iterator(moved)) {
    if (entry.path().filename().string().find("rank1") != std::string::npos) ShiftFile(entry.path(), shift);
  }
  const nlohmann::json after = Align(moved, "collectives");
  ASSERT_EQ(after["method"], "collectives") << after["notes"];
  const auto& was = before["ranks"][1];
  const auto& now = after["ranks"][1];
  // Each alignment is uncertain by its residual (the shifted one may fit a drift where the plain
  // one fits none).
  const int64_t tolerance = 1000 + was["residual_ns"].get<int64_t>() + now["residual_ns"].get<int64_t>();
  // Instants inside the profiled steps (their matched collectives span about 0.3 s from rank 1's
  // first matched end t), aligned before and after: the same instant.
  for (const int64_t later : {int64_t{50000000}, int64_t{150000000}, int64_t{250000000}}) {
    const int64_t t = was["anchor_ns"].get<int64_t>() + later;
    const int64_t aligned_before =
        t + was["offset_ns"].get<int64_t>() + std::llround(was["drift_ppm"].get<double>() * 1e-6 * static_cast<double>(later));
    const int64_t read = shift.At(t);
    const int64_t aligned_after =
        read + now["offset_ns"].get<int64_t>() +
        std::llround(now["drift_ppm"].get<double>() * 1e-6 * static_cast<double>(read - now["anchor_ns"].get<int64_t>()));
    EXPECT_LE(std::abs(aligned_after - aligned_before), tolerance) << "at +" << later << " ns";
  }
  // The drift added, against the one the plain run fitted (a real run's clocks may drift a little
  // of their own, fitted or not by either).
  EXPECT_NEAR(now["drift_ppm"].get<double>(), was["drift_ppm"].get<double>() - 300,
              1e6 * static_cast<double>(tolerance) / 3e8);
}

}  // namespace
}  // namespace stepscope
