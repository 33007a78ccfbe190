// What the panes' analyses computed for one document, after its first frame: a field per pane
// that shows an analysis, filled by the pane's `analyse` off the UI thread (AnalyseDocument,
// pane_table.h) and shared, immutable, by the panes once it has arrived.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profiler/analysis/efficiency.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/memory_timeline.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/step_breakdown.h"
#include "profiler/analysis/steps.h"
#include "viewer/load/rank_paths.h"
#include "viewer/panes/launch_delay_chart.h"
#include "viewer/timeline_data/counter_tracks.h"

namespace stepscope::viewer {

struct DocumentAnalysis {
  analysis::OpStats op_stats;                       // the stats pane
  std::vector<analysis::AllocatorTimeline> memory;  // the memory pane
  analysis::StepsReport steps;                      // the steps pane
  analysis::StepBreakdown step_breakdown;           // its overview: each step split, slow steps
  // The GPU pane: time per GPU and stream, why streams sat idle, what launching cost.
  std::vector<analysis::GpuBreakdown> gpu;
  analysis::IdleReport idle;
  analysis::LaunchReport launches;
  std::vector<LaunchDelayPoint> launch_delays;  // every launch's delay at its kernel's start, in time order
  // The critical-path pane: one path per ProfilerStep#N window, else one for the whole trace.
  // A path is kept compact (a path through a big trace has hundreds of thousands of slices):
  // its summary, and per element the slice, the edge and the times that are not the slice's;
  // names, lanes, starts and durations are the slice's own (as analysis::PathElement takes them).
  struct PathStep {
    uint32_t slice = 0;
    uint8_t edge = 0;  // index into PathEdges()
    int64_t held_ns = 0, wait_ns = 0;
  };
  struct PathWindow {
    std::string label;  // "ProfilerStep#3", "whole trace"
    int64_t begin_ns = 0, end_ns = 0;
    int64_t length_ns = 0, busy_ns = 0, wait_ns = 0;
    int64_t bound_ns[analysis::kPathBounds] = {};
    analysis::PathBound bound_by = analysis::PathBound::kCpu;
    std::vector<PathStep> steps;
    // A step's path across the ranks of a merge (the document's RankMerge::rank_paths): where it
    // changes rank (positions in `steps`, each drawn as a link on the timeline), and what the
    // others waited for ("waiting for rank 1 (its op MatMul)").
    bool across_ranks = false;
    std::vector<size_t> rank_jumps;
    std::string note;
  };
  // The edges PathStep::edge names ("" for the first element, then PathElement::edge's names).
  static const std::vector<std::string>& PathEdges();
  static PathWindow MakePathWindow(std::string label, int64_t begin_ns, int64_t end_ns,
                                   const analysis::CriticalPath& path);
  static PathWindow MakeRankPathWindow(const MergedRankPath& path, size_t ranks);
  std::vector<PathWindow> critical_paths;
  // The GPU attribution pane: GPU time per annotation, frequent kernel sequences.
  analysis::AnnotationReport annotations;
  analysis::KernelPatternReport kernel_patterns;
  // The roofline pane: MFU and each op type under the device's roofline (analysis/efficiency.h).
  analysis::EfficiencyReport efficiency;
  // The timeline's counter tracks, from the memory timelines above and the trace.
  std::shared_ptr<const CounterTracks> counter_tracks;
};

}  // namespace stepscope::viewer
