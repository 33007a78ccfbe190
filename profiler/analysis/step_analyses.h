// Analyses of how a step's time is bound: communication hidden behind compute (overlap), and
// the chain of work that bounds the step (critical path, in critical_path.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "profiler/analysis/step_windows.h"
#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// ---- overlap ---------------------------------------------------------------------------------
// Communication: collective ops, NCCL kernels, fusion-buffer copies. Computation: every other op
// or kernel. Both are taken per device (work on another device hides nothing), as the union of
// their slices; hidden = |comm ∩ compute|, exposed = |comm| - hidden, as HTA reports it.
struct DeviceOverlap {
  std::string device;          // device track path
  int64_t comm_ns = 0, compute_ns = 0, hidden_ns = 0, exposed_ns = 0;
  int64_t comm_slices = 0;
  double hidden_share = 0;     // hidden / comm (0 when there is no comm)
};
struct OverlapStats {
  std::vector<DeviceOverlap> devices;  // devices with communication or compute, in track order
  int64_t comm_ns = 0, hidden_ns = 0, exposed_ns = 0, span_ns = 0;
  double hidden_share = 0;
  double exposed_share_of_step = 0;    // exposed / span of the step
};
OverlapStats ComputeOverlap(const trace::Trace& trace);
bool IsCommunication(const trace::Trace& trace, const trace::Slice& slice);
// The track whose work a track's time is: its device; for traces without device tracks (Chrome
// JSON), its process (Kineto puts each GPU in its own process).
int32_t ResourceOf(const trace::Trace& trace, uint32_t track);

// ---- critical path ---------------------------------------------------------------------------
// What bounds a step, as HTA's critical-path analysis asks it: a graph over the start and the end
// of every slice of work (annotations and sync markers are not work: skipped, their contents kept).
//  - host lanes: a slice starts after the previous one on its thread ended ("lane") or inside its
//    parent ("nested"), and ends after its last child ("child");
//  - GPU streams: work starts after the previous work of its stream ("stream") and after the call
//    that launched it ("launch");
//  - dataflow flows ("dataflow");
//  - a synchronising runtime call (cuda/hip ...Synchronize) ends after the last GPU work of its
//    process that ended while it waited ("sync").
// Walking back from the end of the work that ends last (ops and GPU work, not bare runtime calls
// such as a watchdog thread's event queries), each node takes the predecessor that became ready
// last. The path's time is split into what bound it: cpu (host ops, the gaps between them),
// GPU compute, communication and memory (copies, memsets), launch delay (a call's end to its
// kernel's start), kernel gaps (a stream idle between work already launched) and sync (a
// synchronising call's return after the work it waited for).
enum class PathBound : uint8_t { kCpu, kGpuCompute, kGpuCommunication, kGpuMemory, kLaunchDelay, kKernelGap, kSync };
inline constexpr int kPathBounds = 7;
std::string_view PathBoundName(PathBound bound);  // "cpu", "gpu_compute", ..., "sync"

struct PathElement {
  uint32_t slice = 0;
  std::string name, op_type, kind, lane;  // lane: track path
  int64_t start_ns = 0, dur_ns = 0;
  int64_t held_ns = 0;         // time of the path spent inside this slice
  int64_t wait_ns = 0;         // time of the path between the previous element and this one
  std::string edge;            // how it depends on the previous element: "dataflow", "launch", "lane",
                               // "stream", "nested", "child", "sync"; "" for the first
};
struct PathShare {
  std::string op_type;
  int64_t count = 0, total_ns = 0;
  double share = 0;            // of the path length
};
struct CriticalPath {
  std::vector<PathElement> elements;  // in the order the path enters them
  int64_t length_ns = 0;       // last end - first start
  int64_t begin_ns = 0, end_ns = 0;  // that first start and last end, on the trace's time
  int64_t busy_ns = 0, wait_ns = 0;
  std::vector<PathShare> by_op_type;  // by total_ns descending
  int64_t bound_ns[kPathBounds] = {};  // indexed by PathBound; they add up to length_ns
  PathBound bound_by = PathBound::kCpu;  // the largest
};
// The whole trace, or the work that starts in [begin_ns, end_ns) (a step's window).
CriticalPath ComputeCriticalPath(const trace::Trace& trace);
CriticalPath ComputeCriticalPath(const trace::Trace& trace, int64_t begin_ns, int64_t end_ns);
// Paths of many windows of one trace, each as ComputeCriticalPath(trace, begin, end) gives it:
// what the graphs share is found once, and each window's graph is built from its own slices, so
// a trace with thousands of ProfilerStep#N windows costs about what one window over all of it
// costs. Find() one window at a time (a path holds a record per element).
struct TraceLinks;
class CriticalPathFinder {
 public:
  explicit CriticalPathFinder(const trace::Trace& trace);
  ~CriticalPathFinder();
  CriticalPathFinder(const CriticalPathFinder&) = delete;
  CriticalPathFinder& operator=(const CriticalPathFinder&) = delete;
  CriticalPath Find(int64_t begin_ns, int64_t end_ns) const;
  // The same, walking back from the work that ends last by `by_ns` (the window's work that ends
  // later is left out): the path that leads to a given instant, e.g. a rank's arrival at a
  // collective (rank_critical_path.h).
  CriticalPath FindBefore(int64_t begin_ns, int64_t end_ns, int64_t by_ns) const;
  // The paths of one window to many instants, as pieces. A walk back keeps no state but the node
  // it stands on and its time, so two walks that reach the same node go on as one: the walks are
  // taken into one forest of nodes, cut into pieces where walks start, meet, or first reach one
  // of `stops` (slices: the rank's collectives of the step, rank_critical_path.h) at a node of one
  // that is work of the graph, or, for one that is not (an annotation such as gloo's spans), at a
  // wait over its end. The path to an instant is its entry piece followed by each piece's `next`
  // to the first piece not stopped, each node in one piece only: the same elements, bounds and
  // times as FindBefore's once the step between two pieces (`link`) is added and an element with
  // nodes in two pieces (`open` in the later, `closing` in the earlier) is counted once.
  struct PathPiece {
    CriticalPath path;  // the piece's own stretch; elements unnamed, no by_op_type
    std::vector<uint32_t> open;     // slices of its elements whose start it does not reach, ascending
    std::vector<uint32_t> closing;  // ... whose end it does not reach (a later piece reached it), ascending
    // The slices of its elements another piece of a chain may hold time of too (open and closing:
    // a link's time is inside one of these), ascending.
    std::vector<uint32_t> shared;
    bool stopped = false;           // false: the walk ended in this piece
    std::vector<uint32_t> passes;   // the stops reached going on to `next` (slices, ascending; often none)
    int64_t link_bound_ns[kPathBounds] = {};  // stopped: the step from next's first node to its first node
    uint32_t link_hold_slice = 0;   // ... the element that step is time inside (of either piece), if any
    int64_t link_hold_ns = 0;
    size_t next = 0;                // stopped: the piece the walk goes on with
  };
  struct WindowPieces {
    std::vector<PathPiece> pieces;
    std::vector<int64_t> entries;  // per instant asked: the piece of the walk to it, -1 when no work ends by it
  };
  WindowPieces FindPieces(int64_t begin_ns, int64_t end_ns, std::span<const int64_t> by_ns,
                          std::span<const uint32_t> stops) const;

 private:
  const trace::Trace& trace_;
  std::unique_ptr<const TraceLinks> links_;
};

// ---- one critical path per step --------------------------------------------------------------
// `stepscope critical-path` and the viewer's pane: the path of each of a trace's step windows
// (NumberedStepWindows with kWholeUnlessSeveral: one per ProfilerStep#N window, else one over the
// whole trace). Paths are found one at a time and handed to `visit` in window order, so a trace
// with thousands of steps never holds all their paths at once.
void VisitStepCriticalPaths(const trace::Trace& trace, std::span<const StepWindow> windows,
                            const std::function<void(const StepWindow&, const CriticalPath&)>& visit);
// Every step window of one trace (the windows above, all of them), visited as above.
void VisitCriticalPathsPerStep(const trace::Trace& trace,
                               const std::function<void(const StepWindow&, const CriticalPath&)>& visit);

}  // namespace stepscope::analysis
