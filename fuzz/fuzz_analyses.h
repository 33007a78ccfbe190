// What every reader fuzzer does with a trace it could read: run each analysis over it, so the
// analyses meet the odd traces the readers accept (empty tracks, zero lengths, huge times).
#pragma once

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/call_tree.h"
#include "profiler/analysis/collective_bandwidth.h"
#include "profiler/analysis/efficiency.h"
#include "profiler/analysis/memory_report.h"
#include "profiler/analysis/op_stats.h"
#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/step_breakdown.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/trace/trace.h"

namespace stepscope::fuzz {

inline void RunAnalyses(const trace::Trace& trace) {
  (void)analysis::ComputeOpStats(trace);
  (void)analysis::ComputeKernelStats(trace);
  (void)analysis::ComputeMemcpyStats(trace);
  (void)analysis::ComputeStreamStats(trace);
  (void)analysis::BottomUpTree(analysis::ComputeCallTree(trace));
  (void)analysis::ComputeOverlap(trace);
  (void)analysis::ComputeStepBreakdown(trace);
  (void)analysis::ComputeCriticalPath(trace);
  // One path per step window, as `critical-path` and the viewer find them (numbered steps).
  analysis::VisitCriticalPathsPerStep(trace, [](const analysis::StepWindow&, const analysis::CriticalPath&) {});
  (void)analysis::ComputeMemoryReport(trace);
  (void)analysis::ComputeStragglers(std::span<const trace::Trace>(&trace, 1));  // one rank's steps
  (void)analysis::ComputeCollectiveBandwidth(trace);
  (void)analysis::ComputeEfficiency(trace);  // the device peak picked from the trace's own devices
}

}  // namespace stepscope::fuzz
