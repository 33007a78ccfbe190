// The offline HTML report: escaping of hostile text, shell quoting of the commands it names, the
// memory curve's kept peaks, the step thumbnail on a real trace, and `stepscope report` in-process:
// every figure in the page equals its value in the JSON of the command its section names (the
// efficiency and collectives sections checked against figures worked out by hand too), hostile
// names stay text, the regression gate's exit code 3, and bad input (exit 2, the file named).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/file_io.h"
#include "cli/run_stepscope.h"
#include "profiler/formats/reader.h"
#include "profiler/report/html_page.h"
#include "profiler/report/svg_charts.h"
#include "profiler/report/timeline_thumbnail.h"
#include "test_util.h"

namespace stepscope {
namespace {

using cli::RunStepscope;

const std::vector<std::string> kHostile = {
    "<script>alert(\"k\")</script>", "\"><img src=x onerror=alert(1)>", "' onmouseover='alert(2)",
    "</style><a href=\"https://example.com/x\">link</a>", "<svg onload=alert(3)>"};

TEST(EscapeTest, NoMarkupCharacterSurvivesAndTextIsKept) {
  for (const std::string& text : kHostile) {
    const std::string escaped = report::Escape(text);
    EXPECT_EQ(escaped.find_first_of("<>\"'"), std::string::npos) << escaped;
  }
  EXPECT_EQ(report::Escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
  // Control characters become spaces; bytes that are not UTF-8 the replacement character; UTF-8 stays.
  EXPECT_EQ(report::Escape(std::string("a\x01\x1b" "b\tc")), "a  b\tc");
  EXPECT_EQ(report::Escape("\xff" "x \xc3\xa9"), "\xEF\xBF\xBD" "x \xc3\xa9");
}

TEST(CommandLineTest, QuotesWordsAShellWouldSplitOrExpand) {
  EXPECT_EQ(report::CommandLine({"ops", "run/a.json.gz", "--json"}), "stepscope ops run/a.json.gz --json");
  EXPECT_EQ(report::CommandLine({"ops", "my run/it's.json", "$HOME"}), "stepscope ops 'my run/it'\\''s.json' '$HOME'");
}

TEST(MemoryCurveTest, KeepsANarrowPeakAmongManyPoints) {
  // 100,000 steps of 1 MB; one of 1 ns reaches 9 MB: it must reach the top of the chart.
  std::vector<std::pair<int64_t, int64_t>> points;
  for (int64_t i = 0; i < 100000; ++i) points.emplace_back(i * 10, 1 << 20);
  points.insert(points.begin() + 50001, {500001, int64_t{9} << 20});
  points.insert(points.begin() + 50002, {500002, 1 << 20});
  const std::string svg = report::MemoryCurve(points, 1000000, 900, 160);
  EXPECT_NE(svg.find(" 14.0 L"), std::string::npos) << "the peak is not drawn at the top";
  EXPECT_LT(svg.size(), 60000u);  // per pixel column, not per point
}

TEST(TimelineThumbnailTest, DrawsEveryLaneBoundedAndNamesTheSlowestSlice) {
  auto trace = trace::ReadTrace(testing::SamplePath("h100_resnet50_b32_step3.pb.gz"));
  ASSERT_TRUE(trace.ok()) << trace.status().message();
  // The slowest slice of work, found here independently of the thumbnail.
  const trace::Slice* slowest = nullptr;
  for (const trace::Slice& s : trace->slices()) {
    if (s.duplicate() || s.kind == trace::SliceKind::kAnnotation || s.kind == trace::SliceKind::kSync ||
        s.kind == trace::SliceKind::kPythonFrame) {
      continue;
    }
    if (!slowest || s.dur_ns > slowest->dur_ns) slowest = &s;
  }
  ASSERT_NE(slowest, nullptr);
  const std::string svg = report::TimelineThumbnail(*trace, trace->span_begin_ns(), trace->span_end_ns(), {.width = 600});
  EXPECT_NE(svg.find(report::Escape(std::string(trace->str(trace->slice_name(*slowest))))), std::string::npos);
  // At most one rectangle per two pixels per lane (runs alternate), plus the outlines and the legend.
  size_t count = 0;
  for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++count;
  EXPECT_GT(count, 20u);
  EXPECT_LE(count, 28u * 600 / 2 + 5 + 5);
  EXPECT_EQ(report::TimelineThumbnail(*trace, 5, 5), "");
}

// The figures of a report: per section, its commands (data-argv) and (command, pointer, value).
struct Figures {
  std::vector<std::vector<std::string>> argv;
  std::vector<std::tuple<size_t, std::string, std::string>> cells;
};
std::string Unescape(std::string s) {
  for (auto [from, to] : {std::pair{"&quot;", "\""}, {"&#39;", "'"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) s.replace(at, strlen(from), to);
  }
  return s;
}
std::vector<Figures> FiguresOf(const std::string& html) {
  std::vector<Figures> sections;
  const std::regex argv(R"re(data-argv="([^"]*)")re");
  const std::regex cell(R"re(data-cmd="(\d+)" data-ptr="([^"]*)" data-value="([^"]*)")re");
  for (size_t at = html.find("<section"); at != std::string::npos;) {
    const size_t end = html.find("</section>", at);
    const std::string body = html.substr(at, end - at);
    Figures f;
    for (std::sregex_iterator i(body.begin(), body.end(), argv), e; i != e; ++i) {
      f.argv.push_back(nlohmann::json::parse(Unescape((*i)[1])).get<std::vector<std::string>>());
    }
    for (std::sregex_iterator i(body.begin(), body.end(), cell), e; i != e; ++i) {
      f.cells.emplace_back(std::stoul((*i)[1]), Unescape((*i)[2]), Unescape((*i)[3]));
    }
    sections.push_back(std::move(f));
    at = html.find("<section", end);
  }
  return sections;
}

// Checks every figure of the report against `stepscope ARGV` run here; returns how many.
size_t ExpectFiguresEqualTheJson(const std::string& html) {
  size_t checked = 0;
  bool ok = true;
  for (const Figures& section : FiguresOf(html)) {
    std::vector<nlohmann::json> docs;
    // A command that failed (stragglers of one rank) has no document: its section shows its message.
    for (const auto& args : section.argv) docs.push_back(nlohmann::json::parse(RunStepscope(args).out, nullptr, false));
    for (const auto& [cmd, pointer, value] : section.cells) {
      const nlohmann::json::json_pointer p(pointer);
      if (cmd >= docs.size() || !docs[cmd].contains(p)) {
        ADD_FAILURE() << pointer << " of command " << cmd << ": not in its document";
        ok = false;
        continue;
      }
      EXPECT_EQ(nlohmann::json::parse(value), docs[cmd].at(p)) << pointer << " of " << report::CommandLine(section.argv[cmd]);
      ++checked;
    }
  }
  return ok ? checked : 0;
}

std::string ReadText(const std::string& path) {
  auto bytes = ReadFile(path);
  EXPECT_TRUE(bytes.ok()) << path;
  return bytes.ok() ? *bytes : "";
}

TEST(ReportCommandTest, EveryFigureIsTheValueOfTheCommandItsSectionNames) {
  const std::string out = (testing::ScratchDir("report_cli") / "resnet50.html").string();
  const auto r = RunStepscope({"report", testing::SamplePath("h100_resnet50_b32_step3.pb.gz"), "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + out), std::string::npos);
  const std::string html = ReadText(out);
  EXPECT_LT(html.size(), 1u << 20);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  for (const char* id : {"run", "steps", "timeline", "gpus", "ops", "memory", "critical-path", "efficiency", "collectives",
                         "stragglers", "import"}) {
    EXPECT_NE(html.find("<section id=\"" + std::string(id) + "\">"), std::string::npos) << id;
  }
  EXPECT_NE(html.find("stepscope ops " + testing::SamplePath("h100_resnet50_b32_step3.pb.gz") + " --json"), std::string::npos);
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 200u);
}

// The figures of the section whose commands include `command`, by their pointer.
std::map<std::string, nlohmann::json> SectionFigures(const std::string& html, const std::string& command) {
  std::map<std::string, nlohmann::json> found;
  for (const Figures& section : FiguresOf(html)) {
    for (const auto& [cmd, pointer, value] : section.cells) {
      if (section.argv.at(cmd).at(0) == command) found[pointer] = nlohmann::json::parse(value);
    }
  }
  return found;
}

// Bytes this process has read through read() and the like (/proc/self/io's rchar).
int64_t BytesReadSoFar() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  return -1;
}

TEST(ReportCommandTest, ReadsEachInputOnce) {
  // Each command the report shows analyses the traces it read; only `stragglers` reads them
  // again. Reading the input for each of its dozen commands would read its bytes a dozen times.
  // The bytes read count the compressed file once per read.
  const std::string trace = testing::SamplePath("h100_resnet50_b32_step3.pb.gz");
  const int64_t size = static_cast<int64_t>(std::filesystem::file_size(trace));
  const std::string out = (testing::ScratchDir("report_reads") / "resnet50.html").string();
  const int64_t before = BytesReadSoFar();
  ASSERT_GE(before, 0) << "no /proc/self/io";
  const auto r = RunStepscope({"report", trace, "-o", out});
  const int64_t read = BytesReadSoFar() - before;
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_GE(read, size);
  EXPECT_LT(read, 3 * size) << "the report read " << read << " bytes of a " << size << "-byte trace";
  // With --vs, `diff` analyses side A as read and reads side B once (here the same file).
  const int64_t before_vs = BytesReadSoFar();
  const auto vs = RunStepscope({"report", trace, "--vs", trace, "-o", out});
  const int64_t read_vs = BytesReadSoFar() - before_vs;
  ASSERT_EQ(vs.code, 0) << vs.err;
  EXPECT_LT(read_vs, 4 * size) << "the report --vs read " << read_vs << " bytes, of a " << size << "-byte trace each side";
}

TEST(ReportCommandTest, EfficiencyShowsThePeakMfuAndTheOpsBound) {
  // The hand-made H100 step of tests/data/efficiency/README.md: one fp32 mm of 2*1024*2048*4096
  // FLOPs on a 1 ms step, against the H100 SXM's 67 TFLOP/s fp32.
  const std::string trace = testing::DataPath("efficiency/h100_mm_step.json");
  const std::string out = (testing::ScratchDir("report_efficiency") / "mm.html").string();
  const auto r = RunStepscope({"report", trace, "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadText(out);
  ASSERT_NE(html.find("<section id=\"efficiency\">"), std::string::npos);
  EXPECT_NE(html.find("stepscope efficiency " + trace + " --json"), std::string::npos);
  const auto figures = SectionFigures(html, "efficiency");
  const double mm_flops = 2.0 * 1024 * 2048 * 4096;
  ASSERT_TRUE(figures.count("/peak/flops_per_s"));
  EXPECT_DOUBLE_EQ(figures.at("/peak/flops_per_s").get<double>(), 67e12);
  ASSERT_TRUE(figures.count("/total/mfu"));
  EXPECT_NEAR(figures.at("/total/mfu").get<double>(), mm_flops / 1e-3 / 67e12, 1e-6);
  ASSERT_TRUE(figures.count("/steps/0/mfu"));
  // The mm's kernel ran 400 us: 42.95 TFLOP/s, compute-bound; the op without a formula is listed.
  bool mm_rate = false;
  for (const auto& [pointer, value] : figures) {
    if (pointer.rfind("/ops/", 0) == 0 && pointer.ends_with("/flops_per_s")) mm_rate |= std::abs(value.get<double>() - mm_flops / 400e-6) < 1e6;
  }
  EXPECT_TRUE(mm_rate) << "no op at " << mm_flops / 400e-6 << " FLOP/s";
  EXPECT_NE(html.find("<td>compute</td>"), std::string::npos);
  EXPECT_NE(html.find("aten::mystery_op"), std::string::npos);
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 30u);
}

TEST(ReportCommandTest, ThePeakFlagsReachEfficiencyAndBadOnesExitTwo) {
  // A RunMetadata names no device: without --device its MFU is unknown, with it the H100's 67 TFLOP/s.
  const std::string trace = testing::SamplePath("h100_resnet50_b32_step3.pb.gz");
  const std::string out = (testing::ScratchDir("report_peak") / "resnet50.html").string();
  auto r = RunStepscope({"report", trace, "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(SectionFigures(ReadText(out), "efficiency").count("/total/mfu"));
  r = RunStepscope({"report", trace, "--device", "h100-sxm", "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadText(out);
  EXPECT_NE(html.find("stepscope efficiency " + trace + " --device h100-sxm --json"), std::string::npos);
  const auto figures = SectionFigures(html, "efficiency");
  ASSERT_TRUE(figures.count("/total/mfu") && figures.count("/total/model_flops") && figures.count("/total/duration_ns"));
  EXPECT_NEAR(figures.at("/total/mfu").get<double>(),
              figures.at("/total/model_flops").get<double>() / (figures.at("/total/duration_ns").get<double>() * 1e-9) / 67e12, 1e-9);
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 200u);
  r = RunStepscope({"report", trace, "--device", "nosuch-gpu", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--device nosuch-gpu"), std::string::npos) << r.err;
}

TEST(ReportCommandTest, CollectivesShowTheBusBandwidthPerCollective) {
  // tests/data/collectives/nccl_constructed.json: a 4 MiB float all-reduce over 8 ranks in 100 us
  // has a bus bandwidth of 4 MiB / 100 us * 2 * 7 / 8 = 73.4 GB/s (nccl-tests' definition).
  const std::string trace = testing::DataPath("collectives/nccl_constructed.json");
  const std::string out = (testing::ScratchDir("report_collectives") / "nccl.html").string();
  const auto r = RunStepscope({"report", trace, "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadText(out);
  ASSERT_NE(html.find("<section id=\"collectives\">"), std::string::npos);
  EXPECT_NE(html.find("stepscope collectives " + trace + " --json"), std::string::npos);
  const auto figures = SectionFigures(html, "collectives");
  ASSERT_TRUE(figures.count("/totals/calls"));
  EXPECT_EQ(figures.at("/totals/calls"), 5);
  const double busbw = 4.0 * (1 << 20) / 100e-6 * 2 * 7 / 8;
  bool found = false;
  for (const auto& [pointer, value] : figures) {
    if (pointer.ends_with("/busbw_bytes_per_s")) found |= std::abs(value.get<double>() - busbw) < 1e3;
  }
  EXPECT_TRUE(found) << "no collective at " << busbw << " B/s";
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 40u);
}

TEST(ReportCommandTest, HostileNamesStayText) {
  const auto dir = testing::ScratchDir("report_hostile");
  std::string events = R"({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "<b>thread</b>"}})";
  int64_t t = 100;
  for (const std::string& name : kHostile) {
    const std::string quoted = nlohmann::json(name).dump();
    events += ",\n{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": " + quoted + ", \"pid\": 1, \"tid\": 1, \"ts\": " +
              std::to_string(t) + ", \"dur\": 500}";
    events += ",\n{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": " + quoted + ", \"pid\": 0, \"tid\": 7, \"ts\": " +
              std::to_string(t + 50) + ", \"dur\": 300, \"args\": {\"device\": 0, \"stream\": 7}}";
    t += 600;
  }
  const std::string trace = (dir / "hostile.json").string(), out = (dir / "hostile.html").string();
  ASSERT_TRUE(WriteFileAtomically(trace, "{\"traceEvents\": [" + events + "]}").ok());
  const auto r = RunStepscope({"report", trace, "-o", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadText(out);
  for (const std::string& name : kHostile) {
    EXPECT_EQ(html.find(name), std::string::npos) << "unescaped: " << name;
    EXPECT_NE(html.find(report::Escape(name)), std::string::npos) << "not shown: " << name;
  }
  EXPECT_EQ(html.find("<b>thread"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Every '<' in the page is the writer's: none opens a tag with an event handler.
  EXPECT_FALSE(std::regex_search(html, std::regex(R"re(<[a-zA-Z][^>]*\son[a-z]+=)re")));
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 50u);
}

// Eight steps of 1 ms; aten::mm takes `mm_us` of each.
std::string WriteSteps(const std::string& name, int mm_us) {
  std::string events;
  for (int step = 0; step < 8; ++step) {
    const int64_t t = 1000 + step * 1000, jitter = step * 3 % 7;
    events += std::string(events.empty() ? "" : ",\n") + R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" +
              std::to_string(step + 1) + R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(t) + R"(, "dur": 1000})";
    events += ",\n" + std::string(R"({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": )") +
              std::to_string(t + 10) + R"(, "dur": )" + std::to_string(mm_us + jitter) + "}";
  }
  const std::string path = (testing::ScratchDir("report_gate") / name).string();
  EXPECT_TRUE(WriteFileAtomically(path, "{\"traceEvents\": [" + events + "]}").ok());
  return path;
}

TEST(ReportCommandTest, ShowsTheGateAndExitsThreeWhenItFailsAfterWriting) {
  const std::string a = WriteSteps("a.json", 300), b = WriteSteps("b.json", 450);
  const std::string out = (testing::ScratchDir("report_gate") / "gate.html").string();
  const auto r = RunStepscope({"report", a, "--vs", b, "--fail-on-regression", "10,0.01", "-o", out});
  EXPECT_EQ(r.code, 3) << r.err;
  EXPECT_NE(r.err.find("regression gate"), std::string::npos) << r.err;
  const std::string html = ReadText(out);
  EXPECT_NE(html.find("Regression gate (10.0%, 0.010 ms): FAILED"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"diff\">"), std::string::npos);
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 50u);
  // The same runs under a gate they pass: exit 0, "passed".
  EXPECT_EQ(RunStepscope({"report", a, "--vs", b, "--fail-on-regression", "80", "-o", out}).code, 0);
  EXPECT_NE(ReadText(out).find("): passed"), std::string::npos);
}

TEST(ReportCommandTest, BadInputExitsTwoNamingIt) {
  const std::string out = (testing::ScratchDir("report_bad") / "r.html").string();
  auto r = RunStepscope({"report", "/nonexistent/run.json", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/run.json"), std::string::npos) << r.err;
  r = RunStepscope({"report", testing::SamplePath("h100_resnet50_b32_step3.pb.gz")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("-o/--output"), std::string::npos) << r.err;
  r = RunStepscope({"report", testing::SamplePath("h100_resnet50_b32_step3.pb.gz"), "--vs", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("after --vs"), std::string::npos) << r.err;
  r = RunStepscope({"report", testing::SamplePath("h100_resnet50_b32_step3.pb.gz"), "--fail-on-regression", "5", "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("needs a run to compare with"), std::string::npos) << r.err;
}

TEST(ReportCommandTest, ATruncatedInputFailsUnlessAllowedAndIsThenSaidFirst) {
  const auto dir = testing::ScratchDir("report_truncated");
  auto bytes = ReadFile(testing::DataPath("pytorch_kineto_alexnet_train.json.gz"));
  ASSERT_TRUE(bytes.ok());
  const std::string cut = (dir / "cut.json.gz").string(), out = (dir / "cut.html").string();
  ASSERT_TRUE(WriteFileAtomically(cut, bytes->substr(0, bytes->size() * 6 / 10)).ok());
  auto r = RunStepscope({"report", cut, "-o", out});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(cut), std::string::npos) << r.err;
  r = RunStepscope({"report", cut, "-o", out, "--allow-truncated"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string html = ReadText(out);
  const size_t said = html.find("<p class=\"bad\">Truncated input: " + cut + " ends early");
  ASSERT_NE(said, std::string::npos);
  EXPECT_LT(said, html.find("<table>"));  // before the run's table
  EXPECT_GT(ExpectFiguresEqualTheJson(html), 50u);
}

}  // namespace
}  // namespace stepscope
