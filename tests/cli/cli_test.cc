// `stepscope convert|summary` end to end through RunCli: outputs, exit codes, and one clear
// message naming the file for every kind of bad input, with nothing left at the output path.
#include "profiler/cli/cli.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/file_io.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using testing::DataPath;

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result RunStepscope(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunCli(args, out, err);
  return {code, out.str(), err.str()};
}

std::string Scratch(const std::string& name) { return (testing::ScratchDir("cli") / name).string(); }

std::string WriteInput(const std::string& name, const std::string& content) {
  const std::string path = Scratch(name);
  EXPECT_TRUE(WriteFileAtomically(path, content).ok());
  return path;
}

TEST(CliTest, HelpEverywhere) {
  EXPECT_EQ(RunStepscope({"--help"}).code, 0);
  const Result convert = RunStepscope({"convert", "--help"});
  EXPECT_EQ(convert.code, 0);
  EXPECT_NE(convert.out.find("tf-timeline"), std::string::npos);
  const Result summary = RunStepscope({"summary", "--help"});
  EXPECT_EQ(summary.code, 0);
  EXPECT_NE(summary.out.find("--json"), std::string::npos);
  EXPECT_EQ(RunStepscope({}).code, 2);
  EXPECT_EQ(RunStepscope({"frobnicate"}).code, 2);
  EXPECT_EQ(RunStepscope({"summary", "a", "--bogus"}).code, 2);
  EXPECT_EQ(RunStepscope({"convert", "only-one-arg"}).code, 2);
}

TEST(CliTest, SummaryJsonHasTheDocumentedKeys) {
  const Result r = RunStepscope({"summary", DataPath("ptb_lstm_tf1_gpu_step.pbtxt"), "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["nodes"], 2087);
  ASSERT_EQ(doc["devices"].size(), 7u);
  int64_t total = 0;
  for (const auto& device : doc["devices"]) {
    EXPECT_TRUE(device.contains("name"));
    total += device["nodes"].get<int64_t>();
  }
  EXPECT_EQ(total, 2087);
  for (const char* key : {"schema", "span_ns", "busy", "op_types", "memcpy", "allocators", "import"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
}

TEST(CliTest, SummaryTextNamesTheEssentials) {
  const Result r = RunStepscope({"summary", DataPath("ptb_lstm_tf1_gpu_step.pbtxt"), "--top", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* text : {"2087", "LSTMBlockCell", "HtoD", "GPU_0_bfc", "stream:13"}) {
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
  }
}

TEST(CliTest, ConvertPicksTheFormatFromTheExtension) {
  const std::string in = DataPath("ptb_lstm_tf1_gpu_step.pbtxt");
  for (const char* name : {"out.json", "out.json.gz", "out.pb", "out.pbtxt"}) {
    const std::string out = Scratch(name);
    const Result r = RunStepscope({"convert", in, out});
    ASSERT_EQ(r.code, 0) << name << ": " << r.err;
    // Every output reads back with the same node count (JSON keeps the de-duplicated slices).
    const Result summary = RunStepscope({"summary", out, "--json"});
    ASSERT_EQ(summary.code, 0) << name << ": " << summary.err;
    const int64_t nodes = nlohmann::json::parse(summary.out)["nodes"];
    EXPECT_EQ(nodes, std::string(name).find(".json") != std::string::npos ? 2087 - 755 : 2087) << name;
  }
  auto gz = ReadFileAllowEmpty(Scratch("out.json.gz"));
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(gz->front(), '{');  // inflated transparently: it was gzip on disk
  const std::string tf = Scratch("tf.json");
  ASSERT_EQ(RunStepscope({"convert", in, tf, "--format", "tf-timeline"}).code, 0);
  EXPECT_NE(ReadFile(tf)->find("\"Allocators\""), std::string::npos);
}

// Each bad input: exit 2, a message naming the file and the problem, no output left behind.
struct BadInput {
  std::string file;
  std::string content;  // empty with `is_path` = use file as a path as-is
  std::string expect;   // a phrase the message must contain
};

class CliBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInputTest, ClearMessageExitTwoNoOutput) {
  const BadInput& bad = GetParam();
  std::string in = bad.file;
  if (!bad.content.empty() || bad.file == "empty.pb") in = WriteInput(bad.file, bad.content);
  const std::string out = Scratch("should_not_exist.json");
  std::filesystem::remove(out);
  const Result r = RunStepscope({"convert", in, out});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(in), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(bad.expect), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message: " << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  const Result s = RunStepscope({"summary", in});
  EXPECT_EQ(s.code, 2);
  EXPECT_TRUE(s.out.empty());
}

std::string TruncatedBinary() {
  tf::RunMetadata metadata;
  auto* node = metadata.mutable_step_stats()->add_dev_stats();
  node->set_device("/job:localhost/replica:0/task:0/device:CPU:0");
  for (int i = 0; i < 50; ++i) {
    auto* n = node->add_node_stats();
    n->set_node_name("node_" + std::to_string(i));
    n->set_timeline_label("node = Op(a, b)");
  }
  std::string bytes = metadata.SerializeAsString();
  return bytes.substr(0, bytes.size() - 17);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CliBadInputTest,
    ::testing::Values(
        BadInput{"truncated.pb", TruncatedBinary(), "truncated or corrupt"},
        BadInput{"corrupt.pb", std::string("\x0a\xff\xff\xff\xff\x0f\x01\x02", 8), "truncated or corrupt"},
        BadInput{"malformed.pbtxt", "dev_stats {\n  device: \"/cpu:0\"\n  node_stats { node_name: \"a\" \n", "line 4 column"},
        BadInput{"unknown.pbtxt", "dev_stats {\n  device: \"/cpu:0\"\n  node_stats { node_nmae: \"a\" }\n}\n", "unknown field at line 3 column"},
        BadInput{"nodevice.pbtxt", "dev_stats {\n  node_stats { node_name: \"a\" }\n}\n", "no `device`"},
        BadInput{"noname.pbtxt", "dev_stats {\n  device: \"/cpu:0\"\n  node_stats { all_start_micros: 5 }\n}\n", "no `node_name`"},
        BadInput{"nodevices.pbtxt", "step_stats {\n}\n", "no dev_stats"},
        BadInput{"empty.pb", "", "empty"},
        BadInput{"blank.pbtxt", "   \n\n", "only whitespace"},
        BadInput{"notatrace.json", "{\"model\": \"resnet\"}", "not a trace"},
        BadInput{"/nonexistent/dir/trace.pb", "", "no such file"},
        BadInput{"/tmp", "", "is a directory"}),
    [](const auto& test_info) {
      std::string name = test_info.param.file.substr(test_info.param.file.rfind('/') + 1);
      for (char& c : name) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST(CliTest, UnreadableFile) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file; permission errors cannot occur";
  const std::string in = WriteInput("locked.pb", "x");
  std::filesystem::permissions(in, std::filesystem::perms::none);
  const Result r = RunStepscope({"summary", in});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(in), std::string::npos);
}

TEST(CliTest, BadFormatOrExtensionIsUsageError) {
  const std::string in = DataPath("ptb_lstm_tf1_gpu_step.pbtxt");
  Result r = RunStepscope({"convert", in, Scratch("out.xyz")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("extension"), std::string::npos);
  r = RunStepscope({"convert", in, Scratch("out.json"), "--format", "svg"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown format"), std::string::npos);
}

TEST(CliTest, ExistingOutputSurvivesAFailedConversion) {
  const std::string out = Scratch("keep.json");
  ASSERT_TRUE(WriteFileAtomically(out, "previous result").ok());
  const std::string bad = WriteInput("bad.pbtxt", "dev_stats { device: ");
  EXPECT_EQ(RunStepscope({"convert", bad, out}).code, 2);
  EXPECT_EQ(*ReadFile(out), "previous result");
}

}  // namespace
}  // namespace stepscope::cli
