// A trace cut short, as a profiler killed while writing leaves it: every command that reads
// traces fails with exit 2 naming the file and the cut, and with --allow-truncated analyses what
// was read and says so first (text: the first line; --json: the top-level "truncated" key).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using testing::DataPath;

// The first 12000 bytes of the real AlexNet Kineto trace (.json.gz, 24808 bytes).
std::string CutAlexNet(const std::filesystem::path& dir) {
  std::ifstream in(DataPath("pytorch_kineto_alexnet_train.json.gz"), std::ios::binary);
  std::string bytes(12000, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_EQ(in.gcount(), 12000);
  const std::string path = (dir / "t.json.gz").string();
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TruncatedCliTest, CutGzipIsExitTwoWithTheOffsetAndAllowTruncatedSaysSoFirst) {
  const std::string cut = CutAlexNet(testing::ScratchDir("truncated_cli"));
  const CliResult refused = RunStepscope({"gpu", cut});
  EXPECT_EQ(refused.code, 2);
  EXPECT_TRUE(refused.out.empty());
  const std::string prefix = "stepscope gpu: " + cut + ": the compressed file ends early: its gzip stream stops at byte ";
  ASSERT_EQ(refused.err.rfind(prefix, 0), 0u) << refused.err;
  const int64_t offset = std::stoll(refused.err.substr(prefix.size()));
  EXPECT_GT(offset, 12000);  // decompressed bytes
  EXPECT_NE(refused.err.find(" whole events before it, which --allow-truncated reads"), std::string::npos) << refused.err;

  const CliResult text = RunStepscope({"gpu", cut, "--allow-truncated"});
  ASSERT_EQ(text.code, 0) << text.err;
  const std::string banner = "TRUNCATED INPUT: " + cut + ": the compressed file ends early; read to byte " +
                             std::to_string(offset) + " of its decompressed content (";
  EXPECT_EQ(text.out.rfind(banner, 0), 0u) << text.out;
  EXPECT_NE(text.out.find("\n  gpu / stream"), std::string::npos) << text.out;  // the figures follow

  const CliResult json = RunStepscope({"gpu", cut, "--json", "--allow-truncated"});
  ASSERT_EQ(json.code, 0) << json.err;
  const auto doc = nlohmann::ordered_json::parse(json.out);
  ASSERT_TRUE(doc.is_object());
  auto key = doc.begin();
  EXPECT_EQ(key.key(), "schema");
  EXPECT_EQ((++key).key(), "truncated");
  ASSERT_EQ(doc["truncated"].size(), 1u);
  const auto& t = doc["truncated"][0];
  EXPECT_EQ(t["file"], cut);
  EXPECT_EQ(t["offset"], offset);
  EXPECT_EQ(t["gzip_cut"], true);
  EXPECT_GT(t["events_kept"].get<int64_t>(), 0);
  EXPECT_FALSE(doc["gpus"].empty());
  EXPECT_EQ(json.err.rfind("TRUNCATED INPUT: " + cut, 0), 0u) << json.err;  // said on stderr too

  // The kept events are what `summary` counts, in the same words.
  const CliResult summary = RunStepscope({"summary", cut, "--json", "--allow-truncated"});
  ASSERT_EQ(summary.code, 0) << summary.err;
  const auto counted = nlohmann::json::parse(summary.out);
  EXPECT_EQ(counted["import"]["json_truncated_events_kept"].get<int64_t>(), t["events_kept"].get<int64_t>());
  EXPECT_EQ(counted["import"]["gzip_cut_short_read_to_the_cut"], 1);
}

// Every command that reads traces: refused without the flag, headed by the cut with it, as text
// and as JSON; a whole input gets no notice.
TEST(TruncatedCliTest, EveryCommandThatReadsTracesRefusesOrSaysSoFirst) {
  const auto dir = testing::ScratchDir("truncated_every");
  const std::string cut = CutAlexNet(dir);
  const std::string whole = DataPath("analysis/kineto_small.json");
  const std::string out = (dir / "out.json").string();
  const std::vector<std::vector<std::string>> runs = {
      {"summary", cut},        {"ops", cut},          {"kernels", cut},         {"memory", cut},
      {"memcpy", cut},         {"streams", cut},      {"overlap", cut},         {"critical-path", cut},
      {"diff", cut, whole},    {"steps", cut},        {"merge", cut, whole},    {"gpu", cut},
      {"idle", cut},           {"launches", cut},     {"annotations", cut},     {"kernel-patterns", cut},
      {"convert", cut, out}};
  for (const auto& run : runs) {
    SCOPED_TRACE(run.front());
    const CliResult refused = RunStepscope(run);
    EXPECT_EQ(refused.code, 2) << refused.out;
    EXPECT_NE(refused.err.find(cut + ": the compressed file ends early"), std::string::npos) << refused.err;
    std::vector<std::string> allowed = run;
    allowed.push_back("--allow-truncated");
    const CliResult text = RunStepscope(allowed);
    ASSERT_EQ(text.code, 0) << text.err;
    EXPECT_EQ(text.out.rfind("TRUNCATED INPUT: " + cut + ": ", 0), 0u) << text.out;
    if (run.front() == "convert") continue;  // no --json
    allowed.push_back("--json");
    const CliResult json = RunStepscope(allowed);
    ASSERT_EQ(json.code, 0) << json.err;
    const auto doc = nlohmann::json::parse(json.out);
    ASSERT_TRUE(doc.contains("truncated")) << json.out.substr(0, 200);
    EXPECT_EQ(doc["truncated"][0]["file"], cut);
  }
  // One rank has no stragglers (exit 2 all the same), but it is the cut that is named first.
  EXPECT_NE(RunStepscope({"stragglers", cut}).err.find(cut + ": the compressed file ends early"), std::string::npos);
  const CliResult ranks = RunStepscope({"stragglers", cut, "--allow-truncated"});
  EXPECT_EQ(ranks.code, 2);
  EXPECT_NE(ranks.err.find("no step has work from two ranks"), std::string::npos) << ranks.err;
  EXPECT_EQ(ranks.out.rfind("TRUNCATED INPUT: " + cut + ": ", 0), 0u) << ranks.out;
  const CliResult clean = RunStepscope({"ops", whole, "--allow-truncated", "--json"});
  ASSERT_EQ(clean.code, 0) << clean.err;
  EXPECT_FALSE(nlohmann::json::parse(clean.out).contains("truncated"));
  EXPECT_EQ(RunStepscope({"formats", "--allow-truncated"}).code, 2);  // reads no trace
}

// A directory with one file cut short: merged commands name that file.
TEST(TruncatedCliTest, DirectoryWithAFileCutShort) {
  const auto dir = testing::ScratchDir("truncated_dir") / "run";
  std::filesystem::create_directories(dir);
  const std::string cut = CutAlexNet(dir);
  std::filesystem::copy_file(DataPath("analysis/kineto_small.json"), dir / "whole.json",
                             std::filesystem::copy_options::overwrite_existing);
  for (const std::string command : {"steps", "ops"}) {
    EXPECT_EQ(RunStepscope({command, dir.string()}).code, 2);
    const CliResult r = RunStepscope({command, dir.string(), "--allow-truncated"});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("TRUNCATED INPUT: " + cut + ": ", 0), 0u) << r.out;
    EXPECT_EQ(r.out.find("TRUNCATED INPUT", 1), std::string::npos);  // the whole file is not named
  }
}

}  // namespace
}  // namespace stepscope::cli
