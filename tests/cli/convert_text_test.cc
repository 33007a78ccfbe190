// `stepscope convert` to pbtxt: TensorFlow's schema only by default (what TensorFlow's text
// parser accepts), stepscope's fields on request, and what was left out named on stderr.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "profiler/cli/cli.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using Result = CliResult;

using testing::DataPath;

std::string ConvertScratch(const std::string& name) {
  return (testing::ScratchDir("convert_text") / name).string();
}

std::string Read(const std::string& path) {
  auto bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << path;
  return bytes.ok() ? *bytes : std::string();
}

TEST(ConvertTextTest, DefaultPbtxtIsTheFixtureTensorFlowParsed) {
  const std::string out = ConvertScratch("trainer.pbtxt");
  const Result result = RunStepscope({"convert", DataPath("trainer/lstm_small_step3.pb"), out});
  ASSERT_EQ(result.code, 0) << result.err;
  const std::string text = Read(out);
  EXPECT_EQ(text.find("op_type"), std::string::npos);
  EXPECT_EQ(text.find("stepscope_session"), std::string::npos);
  EXPECT_TRUE(text == Read(DataPath("tf_run_metadata/lstm_small_step3.tf.pbtxt.gz")));
  EXPECT_NE(result.err.find("NodeExecStats.op_type (417)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--keep-extensions"), std::string::npos) << result.err;
}

TEST(ConvertTextTest, KeepExtensionsKeepsOurFieldsAndRoundTrips) {
  const std::string text = ConvertScratch("full.pbtxt");
  const Result result = RunStepscope({"convert", DataPath("trainer/lstm_small_step3.pb"), text, "--keep-extensions"});
  ASSERT_EQ(result.code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_NE(Read(text).find("op_type: \"GatherV2\""), std::string::npos);
  const std::string a = ConvertScratch("a.pb"), b = ConvertScratch("b.pb");
  ASSERT_EQ(RunStepscope({"convert", DataPath("trainer/lstm_small_step3.pb"), a}).code, 0);
  ASSERT_EQ(RunStepscope({"convert", text, b}).code, 0);
  EXPECT_TRUE(Read(a) == Read(b));
  // Only meaningful for text output.
  const Result wrong = RunStepscope({"convert", DataPath("trainer/lstm_small_step3.pb"), ConvertScratch("x.pb"), "--keep-extensions"});
  EXPECT_EQ(wrong.code, 2);
  EXPECT_NE(wrong.err.find("pbtxt output only"), std::string::npos) << wrong.err;
  EXPECT_NE(RunStepscope({"convert", "--help"}).out.find("--keep-extensions"), std::string::npos);
}

TEST(ConvertTextTest, GraphsSurvivePbPbtxtPb) {
  const std::string text = ConvertScratch("graphs.pbtxt"), binary = ConvertScratch("graphs.pb");
  const Result to_text = RunStepscope({"convert", DataPath("tf_run_metadata/two_cpu_graphs.pb"), text});
  ASSERT_EQ(to_text.code, 0) << to_text.err;
  EXPECT_EQ(to_text.err, "");  // nothing left out
  ASSERT_EQ(RunStepscope({"convert", text, binary}).code, 0);
  EXPECT_TRUE(Read(binary) == Read(DataPath("tf_run_metadata/two_cpu_graphs.pb")));
  EXPECT_NE(Read(text).find("op: \"_Send\""), std::string::npos);
}

}  // namespace
}  // namespace stepscope::cli
