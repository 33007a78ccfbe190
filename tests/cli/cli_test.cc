// `stepscope convert|summary` end to end through RunCli: outputs, exit codes, and one clear
// message naming the file for every kind of bad input, with nothing left at the output path.
#include "profiler/cli/cli.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "stepscope/tf/run_metadata.pb.h"
#include "run_stepscope.h"
#include "test_util.h"

namespace stepscope::cli {
namespace {

using Result = CliResult;

using testing::DataPath;

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

// The keys of docs/summary-json.md and their JSON types: an object's members, or the members of
// every entry of an array of objects. `import` holds named counts (open-ended names).
// ...OrNull: a fact the trace may not record (null when it does not).
enum class JsonType { kString, kInt, kNumber, kBool, kObject, kArrayOfObjects, kNamedCounts, kStringOrNull, kIntOrNull };
struct DocumentedKey {
  const char* name;
  JsonType type;
  std::vector<DocumentedKey> members = {};
};

const std::vector<DocumentedKey>& SummaryJsonSchema() {
  using enum JsonType;
  static const std::vector<DocumentedKey> schema = {
      {"schema", kString},
      {"source", kString},
      {"format", kString},
      {"step", kObject,
       {{"step", kIntOrNull}, {"rank", kIntOrNull}, {"world_size", kIntOrNull}, {"host", kStringOrNull},
        {"producer", kStringOrNull}}},
      {"epoch_ns", kInt},
      {"clock", kString},
      {"span_ns", kInt},
      {"nodes", kInt},
      {"devices", kArrayOfObjects,
       {{"name", kString}, {"kind", kString}, {"nodes", kInt}, {"aggregate_duplicates", kBool}}},
      {"busy", kArrayOfObjects,
       {{"device", kString}, {"lanes", kString}, {"slices", kInt}, {"busy_ns", kInt}, {"utilisation", kNumber},
        {"streams", kArrayOfObjects, {{"stream", kString}, {"slices", kInt}, {"busy_ns", kInt}, {"utilisation", kNumber}}}}},
      {"annotations", kArrayOfObjects, {{"lane", kString}, {"kind", kString}, {"slices", kInt}, {"span_ns", kInt}}},
      {"op_types", kArrayOfObjects,
       {{"op_type", kString}, {"where", kString}, {"count", kInt}, {"total_ns", kInt}, {"mean_ns", kInt}}},
      {"memcpy", kArrayOfObjects,
       {{"kind", kString}, {"count", kInt}, {"bytes", kInt}, {"total_ns", kInt}, {"bandwidth_gbps", kNumber},
        {"bandwidth_from", kString}}},
      {"allocators", kArrayOfObjects,
       {{"allocator", kString},
        {"curve_origin", kString},
        {"peak_bytes", kInt},
        {"peak_at_ns", kInt},
        {"samples", kInt},
        {"live_tensors_at_peak", kInt},
        {"largest_live_tensors", kArrayOfObjects,
         {{"name", kString}, {"bytes", kInt}, {"producer_op", kString}, {"created_ns", kInt}, {"released_ns", kInt}}}}},
      {"import", kNamedCounts},
  };
  return schema;
}

// `object` has exactly the documented keys (none missing, none undocumented), each of its type;
// arrays are checked entry by entry.
void ExpectDocumentedObject(const nlohmann::json& object, const std::vector<DocumentedKey>& keys,
                            const std::string& where) {
  ASSERT_TRUE(object.is_object()) << where;
  std::set<std::string> expected, actual;
  for (const DocumentedKey& key : keys) expected.insert(key.name);
  for (const auto& [name, value] : object.items()) actual.insert(name);
  for (const std::string& name : expected) EXPECT_TRUE(actual.count(name)) << where << "." << name << " is documented but missing";
  for (const std::string& name : actual) EXPECT_TRUE(expected.count(name)) << where << "." << name << " is not documented";
  for (const DocumentedKey& key : keys) {
    if (!object.contains(key.name)) continue;
    const nlohmann::json& value = object[key.name];
    const std::string path = where + "." + key.name;
    switch (key.type) {
      case JsonType::kString: EXPECT_TRUE(value.is_string()) << path; break;
      case JsonType::kInt: EXPECT_TRUE(value.is_number_integer()) << path << " = " << value; break;
      case JsonType::kStringOrNull: EXPECT_TRUE(value.is_string() || value.is_null()) << path; break;
      case JsonType::kIntOrNull: EXPECT_TRUE(value.is_number_integer() || value.is_null()) << path << " = " << value; break;
      case JsonType::kNumber: EXPECT_TRUE(value.is_number()) << path; break;
      case JsonType::kBool: EXPECT_TRUE(value.is_boolean()) << path; break;
      case JsonType::kObject: ExpectDocumentedObject(value, key.members, path); break;
      case JsonType::kArrayOfObjects:
        ASSERT_TRUE(value.is_array()) << path;
        for (size_t i = 0; i < value.size(); ++i) {
          ExpectDocumentedObject(value[i], key.members, path + "[" + std::to_string(i) + "]");
        }
        break;
      case JsonType::kNamedCounts:
        ASSERT_TRUE(value.is_object()) << path;
        for (const auto& [name, count] : value.items()) EXPECT_TRUE(count.is_number_integer()) << path << "." << name;
        break;
    }
  }
}

// The schema above is the one docs/summary-json.md gives: its table has exactly these top-level
// keys, and each row names its nested keys.
TEST(CliTest, SummaryJsonSchemaIsTheDocumentedOne) {
  const auto doc = ReadFile(DataPath("../../docs/summary-json.md"));
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  std::map<std::string, std::string> rows;  // key -> the rest of its table row
  std::istringstream in(*doc);
  const std::regex row(R"re(^\| `([a-z_]+)` \|(.*)$)re");
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_match(line, m, row)) rows[m[1]] = m[2];
  }
  std::set<std::string> documented, tested;
  for (const auto& [key, text] : rows) documented.insert(key);
  for (const DocumentedKey& key : SummaryJsonSchema()) tested.insert(key.name);
  EXPECT_EQ(documented, tested);
  for (const DocumentedKey& key : SummaryJsonSchema()) {
    std::vector<std::pair<std::string, const DocumentedKey*>> nested;
    for (const DocumentedKey& member : key.members) nested.emplace_back(key.name, &member);
    for (size_t i = 0; i < nested.size(); ++i) {  // largest_live_tensors' members too
      for (const DocumentedKey& member : nested[i].second->members) nested.emplace_back(key.name, &member);
    }
    for (const auto& [top, member] : nested) {
      EXPECT_NE(rows[top].find(std::string("`") + member->name + "`"), std::string::npos)
          << top << "." << member->name << " is not in the docs' row for " << top;
    }
  }
}

// Every documented key, nested ones included, with its type; nothing undocumented.
TEST(CliTest, SummaryJsonHasTheDocumentedKeys) {
  const std::string in = DataPath("ptb_lstm_tf1_gpu_step.pbtxt");
  const Result r = RunStepscope({"summary", in, "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ExpectDocumentedObject(doc, SummaryJsonSchema(), "summary");
  EXPECT_EQ(doc["schema"], "stepscope.summary/1");
  EXPECT_EQ(doc["source"], in);
  EXPECT_EQ(doc["format"], "StepStats (text)");
  // A TensorFlow step has no stepscope session record: every field is absent (null, not -1).
  EXPECT_EQ(doc["step"], nlohmann::json({{"step", nullptr}, {"rank", nullptr}, {"world_size", nullptr},
                                         {"host", nullptr}, {"producer", nullptr}}));
  EXPECT_EQ(doc["clock"], "unix");  // TensorFlow's µs since the Unix epoch
  EXPECT_EQ(doc["nodes"], 2087);
  ASSERT_EQ(doc["devices"].size(), 7u);
  int64_t total = 0;
  for (const auto& device : doc["devices"]) total += device["nodes"].get<int64_t>();
  EXPECT_EQ(total, 2087);
  // The input exercises every nested key but `annotations`' (below): no array here is empty.
  for (const char* array : {"devices", "busy", "op_types", "memcpy", "allocators", "import"}) {
    EXPECT_FALSE(doc[array].empty()) << array;
  }
  bool some_live_tensors = false, some_streams = false;
  for (const auto& allocator : doc["allocators"]) some_live_tensors |= !allocator["largest_live_tensors"].empty();
  for (const auto& busy : doc["busy"]) some_streams |= !busy["streams"].empty();
  EXPECT_TRUE(some_live_tensors);
  EXPECT_TRUE(some_streams);

  // A PyTorch profiler trace: annotations, and the session facts Kineto records.
  const std::string kineto = DataPath("analysis/kineto_small.json");
  const Result k = RunStepscope({"summary", kineto, "--json"});
  ASSERT_EQ(k.code, 0) << k.err;
  const auto kineto_doc = nlohmann::json::parse(k.out);
  ExpectDocumentedObject(kineto_doc, SummaryJsonSchema(), "summary(kineto)");
  EXPECT_FALSE(kineto_doc["annotations"].empty());
  EXPECT_EQ(kineto_doc["step"]["rank"], 1);
  EXPECT_EQ(kineto_doc["step"]["world_size"], 2);
  EXPECT_TRUE(kineto_doc["step"]["step"].is_null());  // Kineto records no step number
}

// What a trace does not record is left out of the text, never shown as -1; a clock that is not
// Unix time is not called one.
TEST(CliTest, SummaryTextLeavesOutWhatTheTraceDoesNotRecord) {
  const Result tf = RunStepscope({"summary", DataPath("ptb_lstm_tf1_gpu_step.pbtxt")});
  ASSERT_EQ(tf.code, 0) << tf.err;
  EXPECT_EQ(tf.out.find("session"), std::string::npos) << "no session record, no line";
  EXPECT_NE(tf.out.find(" ns since the Unix epoch)"), std::string::npos);
  const Result kineto = RunStepscope({"summary", DataPath("analysis/kineto_small.json")});
  ASSERT_EQ(kineto.code, 0) << kineto.err;
  EXPECT_NE(kineto.out.find("\nsession    rank 1 of 2\n"), std::string::npos) << kineto.out.substr(0, 300);
  for (const char* text : {"-1", "step -1", "/-1"}) {
    EXPECT_EQ(kineto.out.substr(0, kineto.out.find("\nnodes")).find(text), std::string::npos) << text;
  }
  // A Kineto trace on a clock counting from a process start: microseconds, not a date.
  const std::string relative = WriteInput(
      "relative_clock.json",
      R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7, "ts": 5340419.5, "dur": 10}]})");
  const Result r = RunStepscope({"summary", relative});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(from 5340419500 ns on the trace's own clock, not Unix time)"), std::string::npos)
      << r.out.substr(0, 300);
  EXPECT_EQ(r.out.find("Unix epoch"), std::string::npos);
  const Result json = RunStepscope({"summary", relative, "--json"});
  ASSERT_EQ(json.code, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out)["clock"], "trace");
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

// A directory of per-rank traces goes through the input resolver as in every command: summary
// summarizes each rank in turn, exactly as it does each file alone.
TEST(CliTest, SummaryOfADirectoryOfTracesSummarizesEachInTurn) {
  const std::string dir = DataPath("analysis/ranks");
  const Result r0 = RunStepscope({"summary", dir + "/rank0.pbtxt"});
  const Result r1 = RunStepscope({"summary", dir + "/rank1.pbtxt"});
  ASSERT_EQ(r0.code, 0) << r0.err;
  ASSERT_EQ(r1.code, 0) << r1.err;
  const Result both = RunStepscope({"summary", dir});
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(both.out, r0.out + "\n" + r1.out);
  const Result json = RunStepscope({"summary", dir, "--json"});
  ASSERT_EQ(json.code, 0) << json.err;
  const nlohmann::json docs = nlohmann::json::parse(json.out);
  ASSERT_TRUE(docs.is_array());
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], nlohmann::json::parse(RunStepscope({"summary", dir + "/rank0.pbtxt", "--json"}).out));
  EXPECT_EQ(docs[1]["source"], dir + "/rank1.pbtxt");
}

// Several traces into one file: refused (exit 2, naming merge), nothing written; into a
// directory: each converted, byte for byte as alone.
TEST(CliTest, ConvertOfSeveralTracesWritesADirectoryOrRefersToMerge) {
  const std::string dir = DataPath("analysis/ranks");
  const std::string one = Scratch("ranks.json");
  std::filesystem::remove(one);
  const Result refused = RunStepscope({"convert", dir, one});
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find(dir + ": holds 2 traces"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("stepscope merge"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(one));

  const std::string out = Scratch("ranks_out");
  std::filesystem::remove_all(out);
  std::filesystem::create_directories(out);
  const Result no_format = RunStepscope({"convert", dir, out});
  EXPECT_EQ(no_format.code, 2);
  EXPECT_NE(no_format.err.find("pass --format"), std::string::npos) << no_format.err;
  const Result each = RunStepscope({"convert", dir, out, "--format", "chrome"});
  ASSERT_EQ(each.code, 0) << each.err;
  for (const char* rank : {"rank0", "rank1"}) {
    const std::string alone = Scratch(std::string(rank) + "_alone.json");
    ASSERT_EQ(RunStepscope({"convert", dir + "/" + rank + ".pbtxt", alone}).code, 0);
    EXPECT_EQ(*ReadFile(out + "/" + rank + ".json"), *ReadFile(alone)) << rank;
  }
}

// Each bad input: exit 2, a message naming the file and the problem, no output left behind.
struct BadInput {
  std::string file;
  std::string content;  // empty with `is_path` = use file as a path as-is
  std::string expect;   // a phrase the message must contain
  bool directory = false;  // `file` is an empty directory made for the test
};

class CliBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(CliBadInputTest, ClearMessageExitTwoNoOutput) {
  const BadInput& bad = GetParam();
  std::string in = bad.file;
  if (!bad.content.empty() || bad.file == "empty.pb") in = WriteInput(bad.file, bad.content);
  if (bad.directory) {
    in = Scratch(bad.file);
    std::filesystem::create_directories(in);
  }
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
        BadInput{"empty_dir", "", "no trace files in the directory", /*directory=*/true}),
    [](const auto& test_info) {
      std::string name = test_info.param.file.substr(test_info.param.file.rfind('/') + 1);
      for (char& c : name) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

// RunCli in a child process; as root the child first drops to nobody (65534), for whom file
// permissions hold. `code` is kCannotDropPrivileges when the drop itself was refused.
constexpr int kCannotDropPrivileges = 100;

Result RunStepscopeUnprivileged(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, "", std::string("pipe: ") + std::strerror(errno)};
  std::cout.flush();
  std::cerr.flush();
  const pid_t child = ::fork();
  if (child < 0) return {-1, "", std::string("fork: ") + std::strerror(errno)};
  if (child == 0) {
    ::close(fds[0]);
    int code = kCannotDropPrivileges;
    std::string err;
    if (::geteuid() == 0 && (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)) {
      err = std::string("cannot drop to uid/gid 65534: ") + std::strerror(errno);
    } else if (::geteuid() == 0) {
      err = "still root after setuid";
    } else {
      const Result r = RunStepscope(args);
      code = r.code;
      err = r.err;
    }
    const std::string message = std::to_string(code) + "\n" + err;
    for (size_t done = 0; done < message.size();) {
      const ssize_t n = ::write(fds[1], message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    message.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
  const size_t newline = message.find('\n');
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || newline == std::string::npos) {
    return {-1, "", "child died (status " + std::to_string(status) + "): " + message};
  }
  return {std::stoi(message.substr(0, newline)), "", message.substr(newline + 1)};
}

// A file the user may not read: exit 2 and one message naming the file and the reason. Root
// reads any file, so as root the CLI runs in a child that has dropped to nobody, on a mode-000
// file in a directory nobody can traverse.
TEST(CliTest, UnreadableFile) {
  const std::string in = WriteInput("locked.pb", "x");
  namespace fs = std::filesystem;
  fs::permissions(fs::path(in).parent_path(), fs::perms::others_exec | fs::perms::group_exec,
                  fs::perm_options::add);
  fs::permissions(in, fs::perms::none);
  const Result r = RunStepscopeUnprivileged({"summary", in});
  if (r.code == kCannotDropPrivileges) GTEST_SKIP() << r.err;
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(in + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one message: " << r.err;
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
