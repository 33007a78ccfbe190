// `stepscope formats`, and `convert`/`summary`/`diff` on the XSpace and Perfetto protobuf
// inputs and outputs, end to end through RunCli: every output from every input, and damaged
// files refused with the file and offset named, exit 2 and nothing written.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/file_io.h"
#include "profiler/formats/reader.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using testing::DataPath;

std::string Scratch(const std::string& name) { return (testing::ScratchDir("formats_cli") / name).string(); }

TEST(FormatsCliTest, ListsWhatIsReadAndWritten) {
  const CliResult r = RunStepscope({"formats"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"chrome-json", "step-stats", "xspace", "perfetto-proto", "tf-timeline", "pbtxt", ".pftrace",
                           ".xplane.pb"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  const CliResult j = RunStepscope({"formats", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["schema"], "stepscope.formats/1");
  EXPECT_EQ(doc["read"].size(), trace::TraceReaders().size());
  EXPECT_EQ(doc["read"][2]["name"], "xspace");
  EXPECT_EQ(doc["write"].size(), 5u);
  EXPECT_NE(RunStepscope({"--help"}).out.find("formats"), std::string::npos);
}

TEST(FormatsCliTest, ConvertWritesEveryOutputFromEveryInput) {
  const std::vector<std::string> inputs = {
      DataPath("ptb_lstm_tf1_gpu_step.pbtxt"), DataPath("pytorch_kineto_alexnet_train.json.gz"),
      DataPath("xspace/tf2_keras_mlp_cpu.xplane.pb.gz"), DataPath("xspace/jax_mlp_cpu.xplane.pb.gz")};
  int index = 0;
  for (const std::string& in : inputs) {
    SCOPED_TRACE(in);
    // First to Perfetto protobuf; that file is an input too.
    const std::string pftrace = Scratch("in" + std::to_string(index) + ".pftrace");
    const CliResult p = RunStepscope({"convert", in, pftrace});
    ASSERT_EQ(p.code, 0) << p.err;
    for (const std::string& source : {in, pftrace}) {
      for (const char* ext : {".json", ".json.gz", ".pftrace", ".pftrace.gz", ".pb", ".pbtxt"}) {
        const std::string out = Scratch("out" + std::to_string(index) + ext);
        const CliResult r = RunStepscope({"convert", source, out});
        EXPECT_EQ(r.code, 0) << source << " -> " << ext << ": " << r.err;
        auto back = trace::ReadTrace(out);
        ASSERT_TRUE(back.ok()) << out << ": " << back.status().message();
        EXPECT_FALSE(back->slices().empty());
      }
      const CliResult f = RunStepscope({"convert", source, Scratch("x.json"), "--format", "perfetto-proto"});
      EXPECT_EQ(f.code, 0) << f.err;
      auto forced = trace::ReadTrace(Scratch("x.json"));
      ASSERT_TRUE(forced.ok());
      EXPECT_EQ(forced->source_format(), trace::SourceFormat::kPerfettoProto);
    }
    ++index;
  }
}

TEST(FormatsCliTest, SummaryAndDiffOnTheNewInputs) {
  const std::string xplane = DataPath("xspace/tf2_keras_mlp_cpu.xplane.pb.gz");
  const CliResult s = RunStepscope({"summary", xplane, "--json"});
  ASSERT_EQ(s.code, 0) << s.err;
  const auto doc = nlohmann::json::parse(s.out);
  EXPECT_EQ(doc["nodes"].get<int64_t>(), 705);
  EXPECT_EQ(doc["format"], "XSpace (TensorFlow 2 / JAX profiler)");
  const std::string pftrace = Scratch("keras.pftrace");
  ASSERT_EQ(RunStepscope({"convert", xplane, pftrace}).code, 0);
  const CliResult again = RunStepscope({"summary", pftrace, "--json"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(nlohmann::json::parse(again.out)["nodes"].get<int64_t>(), 705);
  const CliResult d = RunStepscope({"diff", xplane, pftrace});
  EXPECT_EQ(d.code, 0) << d.err;
  // The step annotations (step_num) are steps.
  for (const char* file : {"xspace/jax_mlp_cpu.xplane.pb.gz", "xspace/tf2_keras_mlp_cpu.xplane.pb.gz"}) {
    const CliResult steps = RunStepscope({"steps", DataPath(file), "--json"});
    ASSERT_EQ(steps.code, 0) << steps.err;
    EXPECT_NE(steps.out.find("ProfilerStep#2"), std::string::npos) << file << ": " << steps.out.substr(0, 400);
  }
  const CliResult ops = RunStepscope({"ops", DataPath("xspace/jax_mlp_cpu.xplane.pb.gz")});
  EXPECT_EQ(ops.code, 0) << ops.err;
  EXPECT_NE(ops.out.find("ynn_fusion"), std::string::npos);
}

TEST(FormatsCliTest, XSpaceStatsReachChromeJsonArgs) {
  const std::string out = Scratch("jax.json");
  ASSERT_EQ(RunStepscope({"convert", DataPath("xspace/jax_mlp_cpu.xplane.pb.gz"), out}).code, 0);
  auto text = ReadFile(out);
  ASSERT_TRUE(text.ok());
  const auto doc = nlohmann::json::parse(*text);
  int64_t slices = 0, with_module = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ++slices;
    if (e["args"].contains("hlo_module")) {
      ++with_module;
      EXPECT_TRUE(e["args"]["program_id"].is_number());
    }
  }
  EXPECT_EQ(slices, 207);
  EXPECT_GT(with_module, 0);
}

TEST(FormatsCliTest, DamagedInputsNameFileAndOffsetAndWriteNothing) {
  auto xplane = ReadFile(DataPath("xspace/tf2_keras_mlp_cpu.xplane.pb.gz"));
  ASSERT_TRUE(xplane.ok());
  const std::string cut_xplane = Scratch("cut.xplane.pb");
  ASSERT_TRUE(WriteFileAtomically(cut_xplane, xplane->substr(0, xplane->size() / 2)).ok());
  const std::string pftrace = Scratch("whole.pftrace");
  ASSERT_EQ(RunStepscope({"convert", DataPath("pytorch_kineto_alexnet_train.json.gz"), pftrace}).code, 0);
  auto bytes = ReadFile(pftrace);
  ASSERT_TRUE(bytes.ok());
  const std::string cut_pftrace = Scratch("cut.pftrace");
  ASSERT_TRUE(WriteFileAtomically(cut_pftrace, bytes->substr(0, bytes->size() - 5), /*gzip=*/true).ok());
  for (const auto& [in, kind] : {std::pair{cut_xplane, "XSpace"}, std::pair{cut_pftrace, "Perfetto protobuf"}}) {
    SCOPED_TRACE(in);
    for (const char* ext : {".json", ".pftrace", ".pb"}) {
      const std::string out = Scratch(std::string("never") + ext);
      std::filesystem::remove(out);
      const CliResult r = RunStepscope({"convert", in, out});
      EXPECT_EQ(r.code, 2);
      EXPECT_NE(r.err.find(in + ": offset "), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(kind), std::string::npos) << r.err;
      EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
      EXPECT_FALSE(std::filesystem::exists(out));
    }
    EXPECT_EQ(RunStepscope({"summary", in}).code, 2);
  }
  EXPECT_EQ(RunStepscope({"convert", cut_xplane, Scratch("y.bin"), "--format", "xspace"}).code, 2);
}

}  // namespace
}  // namespace stepscope::cli
