// Our own Chrome JSON export read back: `summary`, `ops` and `steps` of the export of a real
// trainer trace, and `stragglers` of two ranks' exports, give the source's answers, except the
// fields the Chrome format cannot carry (listed below, each with why).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using nlohmann::json;

// What legitimately differs between a source and its export:
// - source and format: the file read;
// - the aggregate lanes (/stream:all, a GPU's /memcpy): their slices repeat the streams' and are
//   not exported, so the devices' node counts and the import stats that marked them go;
// - allocators: the export writes each curve as counter events, not the allocation records, so
//   the tensors live at the peak are not known; the curve (name, origin, peak, its time, the
//   samples) stays.
void DropWhatChromeCannotCarry(json& doc) {
  if (!doc.is_object()) return;
  doc.erase("source");
  doc.erase("format");
  if (doc.contains("devices") && doc["devices"].is_array()) {
    doc.erase("nodes");
    json kept = json::array();
    for (const json& d : doc["devices"]) {
      if (!d.value("aggregate_duplicates", false)) kept.push_back(d);
    }
    doc["devices"] = kept;
  }
  if (doc.contains("allocators") && doc["allocators"].is_array()) {
    for (json& allocator : doc["allocators"]) {
      for (const char* key : {"live_tensors_at_peak", "largest_live_tensors"}) {
        allocator.erase(key);
      }
    }
  }
  doc.erase("import");
  for (auto& [key, value] : doc.items()) {
    if (value.is_array()) {
      for (json& item : value) DropWhatChromeCannotCarry(item);
    } else {
      DropWhatChromeCannotCarry(value);
    }
  }
}

std::string Exported(const std::string& source) {
  const std::string exported =
      (stepscope::testing::ScratchDir("chrome_roundtrip") / (std::filesystem::path(source).stem().string() + ".json"))
          .string();
  const CliResult convert = RunStepscope({"convert", source, exported});
  EXPECT_EQ(convert.code, 0) << convert.err;
  return exported;
}

void ExpectSameAnswers(const std::vector<std::string>& command, const std::vector<std::string>& sources,
                       const std::vector<std::string>& exports) {
  std::vector<std::string> from_source_args = command, from_export_args = command;
  from_source_args.insert(from_source_args.end(), sources.begin(), sources.end());
  from_export_args.insert(from_export_args.end(), exports.begin(), exports.end());
  const CliResult a = RunStepscope(from_source_args), b = RunStepscope(from_export_args);
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  json from_source = json::parse(a.out), from_export = json::parse(b.out);
  DropWhatChromeCannotCarry(from_source);
  DropWhatChromeCannotCarry(from_export);
  EXPECT_EQ(from_export, from_source) << command[0] << " of " << sources[0] << "\n"
                                      << json::diff(from_source, from_export).dump(1);
}

class ChromeRoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChromeRoundTripTest, ExportReadsBackWithTheSourcesAnswers) {
  const std::string source = GetParam();
  const std::string exported = Exported(source);
  for (const char* command : {"summary", "ops", "steps"}) {
    ExpectSameAnswers({command, "--json"}, {source}, {exported});
  }
}

INSTANTIATE_TEST_SUITE_P(
    TrainerTraces, ChromeRoundTripTest,
    ::testing::Values(stepscope::testing::DataPath("collectives/lstm_small_mpi2_step3_rank0.pb.gz"),
                      stepscope::testing::DataPath("collectives/lstm_small_mpi2_step3_rank1.pb.gz"),
                      stepscope::testing::DataPath("collectives/lstm_small_cpu2_fusion_step3.pb.gz"),
                      stepscope::testing::SamplePath("h100_resnet50_b32_step3.pb.gz")));

// Two ranks' exports: the same ranks, step, clock (one host) and so the same stragglers.
TEST(ChromeRoundTripRanksTest, StragglersOfTheExportsAreTheSources) {
  const std::vector<std::string> sources = {
      stepscope::testing::DataPath("collectives/lstm_small_mpi2_step3_rank0.pb.gz"),
      stepscope::testing::DataPath("collectives/lstm_small_mpi2_step3_rank1.pb.gz")};
  const std::vector<std::string> exports = {Exported(sources[0]), Exported(sources[1])};
  ExpectSameAnswers({"stragglers", "--json"}, sources, exports);
}

}  // namespace
}  // namespace stepscope::cli
