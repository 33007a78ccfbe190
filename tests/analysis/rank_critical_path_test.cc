// The critical path across ranks (analysis/rank_critical_path.h) on the real traces of a gloo job
// (tests/data/analysis/gloo_ranks): one rank's op slowed by a known delay in a copy of its trace
// (the op made longer, everything of that rank after it later by as much; on the other ranks,
// the collective that waits for it longer by as much and all after it later), and the path of
// that step must run through the slowed rank and its op, the wait recounted from the files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/kineto_generator.h"
#include "base/file_io.h"
#include "profiler/analysis/rank_critical_path.h"
#include "profiler/formats/inputs.h"
#include "profiler/formats/reader.h"
#include "test_util.h"

namespace stepscope::analysis {
namespace {

constexpr int kRanks = 3;
constexpr int kSlowRank = 2;
constexpr double kDelayUs = 1e6;  // 1 s: far beyond every wait of the run itself (at most ~0.5 s)
const char* const kSlowOp = "autograd::engine::evaluate_function: AddmmBackward0";

nlohmann::json ReadRank(int rank) {
  auto text = ReadFile(stepscope::testing::DataPath("analysis/gloo_ranks/rank" + std::to_string(rank) + ".json.gz"));
  EXPECT_TRUE(text.ok()) << text.status().message();
  return nlohmann::json::parse(*text);
}

// The step's ProfilerStep#4 span [begin, end) in µs.
std::pair<double, double> Step4(const nlohmann::json& doc) {
  for (const auto& e : doc["traceEvents"]) {
    if (e.value("name", "") == "ProfilerStep#4") return {e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
  }
  ADD_FAILURE() << "no ProfilerStep#4";
  return {0, 0};
}

// The first event of `name` (prefix) starting in step 4.
const nlohmann::json& FirstInStep4(const nlohmann::json& doc, const std::string& prefix) {
  const auto [begin, end] = Step4(doc);
  const nlohmann::json* first = nullptr;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.contains("dur") || !e.value("name", "").starts_with(prefix)) continue;
    const double ts = e["ts"].get<double>();
    if (ts >= begin && ts < end && (first == nullptr || ts < (*first)["ts"].get<double>())) first = &e;
  }
  EXPECT_NE(first, nullptr) << prefix;
  return *first;
}

// Everything from `cut` on later by `delay`; what runs across `cut` longer by as much.
void Delay(nlohmann::json& doc, double cut, double delay) {
  for (auto& e : doc["traceEvents"]) {
    if (!e.contains("ts")) continue;
    const double ts = e["ts"].get<double>();
    if (ts >= cut) {
      e["ts"] = ts + delay;
    } else if (e.contains("dur") && ts + e["dur"].get<double>() > cut) {
      e["dur"] = e["dur"].get<double>() + delay;
    }
  }
}

struct Job {
  std::vector<trace::Trace> traces;
  double slow_arrival_us = 0;               // the slowed rank's arrival at step 4's first all-reduce
  std::vector<double> arrival_us;           // every rank's, by rank
};

// The job's traces, rank kSlowRank's kSlowOp of step 4 made `delay_us` longer.
Job Traces(const std::string& tag, double delay_us) {
  const auto dir = stepscope::testing::ScratchDir("rank_critical_path_" + tag);
  Job job;
  for (int rank = 0; rank < kRanks; ++rank) {
    nlohmann::json doc = ReadRank(rank);
    const nlohmann::json& first = FirstInStep4(doc, "gloo:all_reduce");
    double arrival = first["ts"].get<double>();
    if (delay_us > 0) {
      if (rank == kSlowRank) {
        const nlohmann::json& op = FirstInStep4(doc, kSlowOp);
        Delay(doc, op["ts"].get<double>() + op["dur"].get<double>() - 1, delay_us);  // the op itself longer
        arrival += delay_us;  // it starts after the op
      } else {
        // The all-reduce waits for the slowed rank: it ends later, and so does all after it.
        Delay(doc, first["ts"].get<double>() + first["dur"].get<double>() - 1, delay_us);
      }
    }
    job.arrival_us.push_back(arrival);
    std::ofstream(dir / ("rank" + std::to_string(rank) + ".json")) << doc.dump();
  }
  job.slow_arrival_us = job.arrival_us[kSlowRank];
  auto traces = trace::ReadTraces({dir.string()});
  EXPECT_TRUE(traces.ok()) << traces.status().message();
  job.traces = std::move(traces).value();
  return job;
}

const CrossRankPath* StepPath(const CrossRankPaths& paths, int64_t step) {
  for (const CrossRankPath& p : paths.steps) {
    if (p.step == step) return &p;
  }
  return nullptr;
}

// A path's parts add up to its length, and its segments and waits alternate in time.
void ExpectConsistent(const CrossRankPath& path) {
  int64_t sum = path.transfer_ns + path.gap_ns;
  for (int b = 0; b < kPathBounds; ++b) sum += path.bound_ns[b];
  EXPECT_EQ(sum, path.length_ns);
  EXPECT_EQ(path.length_ns, path.end_ns - path.begin_ns);
  ASSERT_EQ(path.segments.size(), path.waits.size() + 1);
  for (size_t k = 0; k < path.waits.size(); ++k) {
    EXPECT_EQ(path.segments[k].rank, path.waits[k].waited_for);
    EXPECT_EQ(path.segments[k + 1].rank, path.waits[k].rank);
    EXPECT_LE(path.segments[k].end_ns, path.waits[k].arrival_ns);
    EXPECT_LE(path.waits[k].arrival_ns, path.segments[k + 1].begin_ns);
  }
}

TEST(RankCriticalPathTest, TheSlowedRanksOpHoldsTheStep) {
  const Job plain = Traces("plain", 0);
  const Job slow = Traces("slow", kDelayUs);
  const CrossRankPaths before = ComputeCrossRankPaths(plain.traces);
  const CrossRankPaths after = ComputeCrossRankPaths(slow.traces);
  ASSERT_EQ(after.alignment.method, AlignMethod::kCollectives);
  const CrossRankPath* path = StepPath(after, 4);
  const CrossRankPath* was = StepPath(before, 4);
  ASSERT_NE(path, nullptr);
  ASSERT_NE(was, nullptr);
  ExpectConsistent(*path);
  ExpectConsistent(*was);
  // The step waited longest for the slowed rank, at the all-reduce it came late to, and its op
  // is the slowed one.
  ASSERT_GE(path->held_by, 0);
  const RankHold& hold = path->holds[static_cast<size_t>(path->held_by)];
  EXPECT_EQ(hold.rank, kSlowRank);
  EXPECT_EQ(hold.op, kSlowOp);
  EXPECT_TRUE(hold.collective.starts_with("gloo:all_reduce")) << hold.collective;
  // Recount: the slowed rank's arrival after the last of the others, on the aligned clock (the
  // files' µs plus each rank's correction there).
  auto aligned_ns = [&](int rank, double us) {
    const auto ns = static_cast<int64_t>(std::llround(us * 1000));
    size_t input = 0;
    while (after.alignment.ranks[after.alignment.rank_of_input[input]].rank != rank) ++input;
    return ns + after.alignment.CorrectionAt(input, ns);
  };
  int64_t others = INT64_MIN;
  for (int rank = 0; rank < kRanks; ++rank) {
    if (rank != kSlowRank) others = std::max(others, aligned_ns(rank, slow.arrival_us[static_cast<size_t>(rank)]));
  }
  const int64_t arrival = aligned_ns(kSlowRank, slow.slow_arrival_us);
  EXPECT_NEAR(static_cast<double>(hold.arrival_ns), static_cast<double>(arrival), 2);
  EXPECT_NEAR(static_cast<double>(hold.late_ns), static_cast<double>(arrival - others), 4);
  EXPECT_GE(hold.late_ns, static_cast<int64_t>(kDelayUs * 1000) - 300'000'000);
  // The path runs through the slowed rank's op for the op's whole own time, the delay included.
  int64_t held = 0;
  for (const RankSegment& segment : path->segments) {
    if (segment.rank != kSlowRank) continue;
    for (const PathElement& e : segment.path.elements) {
      if (e.name == kSlowOp) held = std::max(held, e.held_ns);
    }
  }
  EXPECT_GE(held, static_cast<int64_t>(kDelayUs * 1000));
  // Everything after the op came later by the delay on every rank, so the step's path is longer
  // by the delay (to the µs the files keep).
  EXPECT_NEAR(static_cast<double>(path->length_ns - was->length_ns), kDelayUs * 1000, 2000);
}

// ---- chained pieces against the direct walk --------------------------------------------------

// A window's path to `by` as its pieces chain it (FindPieces), summed as step_analyses.h says:
// the links between the pieces added, an element with nodes in two pieces counted once.
struct ChainedSum {
  int64_t begin_ns = 0, end_ns = 0, length_ns = 0, slices = 0;
  int64_t bound_ns[kPathBounds] = {};
  std::set<uint32_t> passes;
};
ChainedSum SumChain(const CriticalPathFinder::WindowPieces& pieces, int64_t entry) {
  ChainedSum sum;
  std::set<uint32_t> open;
  bool first = true;
  for (int64_t at = entry; at >= 0;) {
    const CriticalPathFinder::PathPiece& piece = pieces.pieces[static_cast<size_t>(at)];
    for (int b = 0; b < kPathBounds; ++b) sum.bound_ns[b] += piece.path.bound_ns[b];
    sum.slices += static_cast<int64_t>(piece.path.elements.size());
    for (uint32_t slice : piece.closing) sum.slices -= open.erase(slice) ? 1 : 0;
    open.insert(piece.open.begin(), piece.open.end());
    if (first) sum.end_ns = piece.path.end_ns, first = false;
    if (!piece.path.elements.empty()) sum.begin_ns = piece.path.begin_ns;
    if (!piece.stopped) break;
    for (int b = 0; b < kPathBounds; ++b) sum.bound_ns[b] += piece.link_bound_ns[b];
    sum.passes.insert(piece.passes.begin(), piece.passes.end());
    at = static_cast<int64_t>(piece.next);
  }
  sum.length_ns = sum.end_ns - sum.begin_ns;
  return sum;
}

// For every step window of `trace` and every instant the walk across ranks starts from (each
// collective's start, the end of the work), the chained pieces give FindBefore's path: a greedy
// walk back continued from a node is the walk started there. Returns how many paths it compared.
int ExpectChainsEqualDirectWalks(const trace::Trace& trace) {
  const ClockDigest clock = DigestClock(trace, 0);
  const CriticalPathFinder finder(trace);
  const trace::Trace* one = &trace;
  const auto windows = NumberedStepWindows({one, 1}, std::nullopt, StepWindowing::kEveryStep);
  int compared = 0;
  for (const StepWindow& w : windows.front()) {
    std::vector<uint32_t> stops;
    std::vector<int64_t> instants = {INT64_MAX};
    for (const auto& [key, instances] : clock.collectives) {
      if (key.step != w.step) continue;
      for (const CollectiveInstance& i : instances) {
        stops.push_back(i.slice);
        instants.push_back(i.start_ns - trace.epoch_ns());
        instants.push_back(i.end_ns - trace.epoch_ns());
      }
    }
    const CriticalPathFinder::WindowPieces pieces = finder.FindPieces(w.begin_ns, w.end_ns, instants, stops);
    EXPECT_EQ(pieces.entries.size(), instants.size());
    for (size_t k = 0; k < instants.size(); ++k) {
      const CriticalPath direct = finder.FindBefore(w.begin_ns, w.end_ns, instants[k]);
      if (direct.elements.empty()) {
        EXPECT_EQ(pieces.entries[k], -1) << "step " << w.step << " by " << instants[k];
        continue;
      }
      if (pieces.entries[k] < 0) {
        ADD_FAILURE() << "no piece for step " << w.step << " by " << instants[k];
        continue;
      }
      const ChainedSum chained = SumChain(pieces, pieces.entries[k]);
      EXPECT_EQ(chained.begin_ns, direct.begin_ns) << "step " << w.step << " by " << instants[k];
      EXPECT_EQ(chained.end_ns, direct.end_ns) << "step " << w.step << " by " << instants[k];
      EXPECT_EQ(chained.slices, static_cast<int64_t>(direct.elements.size())) << "by " << instants[k];
      for (int b = 0; b < kPathBounds; ++b) EXPECT_EQ(chained.bound_ns[b], direct.bound_ns[b]) << "bound " << b;
      // The collectives of the graph on the direct path are those the chain passed.
      std::set<uint32_t> on_path;
      for (const PathElement& e : direct.elements) on_path.insert(e.slice);
      for (uint32_t stop : stops) {
        if (!trace::IsAnnotationOrSync(trace.slices()[stop].kind)) {
          EXPECT_EQ(on_path.contains(stop), chained.passes.contains(stop) || chained.end_ns == trace.slices()[stop].end_ns())
              << "collective slice " << stop << " by " << instants[k];
        }
      }
      ++compared;
    }
  }
  return compared;
}

TEST(RankCriticalPathTest, ChainedPiecesAreTheDirectWalkOnGlooRanks) {
  const Job slow = Traces("pieces", kDelayUs);
  int compared = 0;
  for (const trace::Trace& trace : slow.traces) compared += ExpectChainsEqualDirectWalks(trace);
  EXPECT_GT(compared, 50);
}

TEST(RankCriticalPathTest, ChainedPiecesAreTheDirectWalkOnGeneratedNcclRanks) {
  int compared = 0;
  for (int rank : {0, 3}) {
    const auto generated = analysis::testing::GenerateKinetoJson(
        256 << 10, {.rank = rank, .world_size = 4, .iterations_per_step = 20, .slow_kernel_ns = rank == 3 ? 2000 : 0});
    const auto dir = stepscope::testing::ScratchDir("rank_pieces_nccl_" + std::to_string(rank));
    ASSERT_TRUE(WriteFileAtomically((dir / "rank.json").string(), generated.json).ok());
    auto trace = trace::ReadTrace((dir / "rank.json").string());
    ASSERT_TRUE(trace.ok()) << trace.status().message();
    compared += ExpectChainsEqualDirectWalks(*trace);
  }
  EXPECT_GT(compared, 50);
}

// The path across ranks, chained from the ranks' digests, against each segment's path found
// directly on its trace (FindBefore over the segment's window, to its instant): the same length,
// number of slices and bound, on the slowed gloo job whose path is known to change rank.
TEST(RankCriticalPathTest, ChainedSegmentsAreTheDirectWalk) {
  const Job slow = Traces("segments", kDelayUs);
  const CrossRankPaths paths = ComputeCrossRankPaths(slow.traces);
  size_t waits = 0, segments = 0;
  for (const CrossRankPath& path : paths.steps) {
    ExpectConsistent(path);
    waits += path.waits.size();
    for (const RankSegment& s : path.segments) {
      EXPECT_EQ(s.length_ns, s.path.length_ns) << "step " << path.step << " rank " << s.rank;
      EXPECT_EQ(s.slices, static_cast<int64_t>(s.path.elements.size())) << "step " << path.step << " rank " << s.rank;
      if (!s.path.elements.empty()) {
        EXPECT_EQ(s.bound_by, s.path.bound_by) << "step " << path.step;
      }
      ++segments;
    }
  }
  EXPECT_GT(waits, 0u);
  EXPECT_GT(segments, paths.steps.size());
}

// One rank: nothing to join; the single-rank path is all there is.
TEST(RankCriticalPathTest, OneRankHasNoPathAcrossRanks) {
  const Job plain = Traces("one", 0);
  std::vector<trace::Trace> one;
  one.push_back(std::move(const_cast<Job&>(plain).traces.front()));
  const CrossRankPaths paths = ComputeCrossRankPaths(one);
  EXPECT_TRUE(paths.steps.empty());
}

}  // namespace
}  // namespace stepscope::analysis
