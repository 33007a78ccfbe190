// GPU work attributed back to what the user wrote: the annotations (or name scopes) that launched
// it, and the kernel sequences that repeat (gpu_analyses.h).
#include <algorithm>
#include <bit>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "profiler/analysis/breakdowns.h"
#include "profiler/analysis/gpu_analyses.h"
#include "profiler/analysis/gpu_work.h"
#include "profiler/analysis/summary.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceKind;
using trace::Trace;
using Intervals = std::vector<std::pair<int64_t, int64_t>>;

namespace {

// Spans that hold a whole step or the whole profile: steps are chosen with --step, and the
// profiler's own span would be the root of everything.
bool IsStepOrProfilerSpan(std::string_view name) {
  return name.starts_with("ProfilerStep#") || name.starts_with("PyTorch Profiler");
}

// The annotation tree: node 0 is the root (outside every annotation).
struct AnnotationNode {
  uint32_t parent = 0;
  std::string name;
  bool name_scope = false;
  std::map<std::string, uint32_t> children;
  AnnotationTime time;
  std::map<std::pair<const Trace*, uint32_t>, Intervals> work_by_device;  // inclusive
};

class AnnotationTree {
 public:
  AnnotationTree() { nodes_.emplace_back(); }

  uint32_t Child(uint32_t parent, std::string_view name, bool name_scope) {
    auto it = nodes_[parent].children.find(std::string(name));
    if (it != nodes_[parent].children.end()) return it->second;
    const auto id = static_cast<uint32_t>(nodes_.size());
    nodes_[parent].children.emplace(std::string(name), id);
    AnnotationNode node;
    node.parent = parent;
    node.name = std::string(name);
    node.name_scope = name_scope;
    nodes_.push_back(std::move(node));
    return id;
  }
  // The node of a name-scoped op: one level per "/"-separated scope of its name.
  uint32_t Scopes(std::string_view op_name) {
    uint32_t node = 0;
    size_t begin = 0;
    for (size_t slash = op_name.find('/'); slash != std::string_view::npos; slash = op_name.find('/', begin)) {
      if (slash > begin) node = Child(node, op_name.substr(begin, slash - begin), true);
      begin = slash + 1;
    }
    return node;
  }
  AnnotationNode& operator[](uint32_t id) { return nodes_[id]; }

  // Depth first from the root's children, siblings by GPU time (then name).
  std::vector<AnnotationTime> Rows() {
    std::vector<AnnotationTime> rows;
    std::vector<std::string> path;
    Walk(0, path, rows);
    return rows;
  }

 private:
  void Walk(uint32_t id, std::vector<std::string>& path, std::vector<AnnotationTime>& rows) {
    std::vector<uint32_t> children;
    for (const auto& [name, child] : nodes_[id].children) children.push_back(child);
    std::stable_sort(children.begin(), children.end(),
                     [&](uint32_t a, uint32_t b) { return nodes_[a].time.gpu_ns > nodes_[b].time.gpu_ns; });
    for (uint32_t child : children) {
      AnnotationNode& node = nodes_[child];
      path.push_back(node.name);
      node.time.path = path;
      node.time.name_scope = node.name_scope;
      for (auto& [device, intervals] : node.work_by_device) {
        for (const auto& [a, b] : MergeIntervals(std::move(intervals))) node.time.gpu_busy_ns += b - a;
      }
      node.work_by_device.clear();
      rows.push_back(node.time);
      Walk(child, path, rows);
      path.pop_back();
    }
  }

  std::vector<AnnotationNode> nodes_;
};

// GPU lanes launch nothing; their annotations (Kineto's gpu_user_annotation) mirror the host's.
bool LaunchesNothing(trace::TrackKind kind) { return trace::IsGpuLane(kind); }

// The annotation node in effect where each slice of the launching tracks runs (its own node for
// an annotation), 4 bytes a slice of those tracks only, and no table at all where no track holds
// an annotation (every slice is then at the root).
class AnnotationNodeIndex {
 public:
  uint32_t operator[](uint32_t slice) const { return nodes_.Get(slice, 0); }

 private:
  friend AnnotationNodeIndex AnnotationNodes(const GpuInput& input, AnnotationTree& tree);
  TrackSliceValues nodes_;  // the launching tracks' slices
};

// Annotation spans starting in the input's windows are counted into their nodes.
AnnotationNodeIndex AnnotationNodes(const GpuInput& input, AnnotationTree& tree) {
  const Trace& trace = *input.trace;
  AnnotationNodeIndex index;
  std::vector<bool> launching(trace.tracks().size(), false);
  bool annotated = false;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (LaunchesNothing(trace.tracks()[t].kind)) continue;
    launching[t] = true;
    for (const Slice& s : trace.track_slices(t)) {
      annotated = annotated || (s.kind == SliceKind::kAnnotation && !s.duplicate() &&
                                !IsStepOrProfilerSpan(trace.str(trace.slice_name(s))));
    }
  }
  if (!annotated) return index;
  index.nodes_ = TrackSliceValues(trace, launching, 0);
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!launching[t]) continue;
    uint32_t* node_of = index.nodes_.Of(t);
    const auto lane = trace.track_slices(t);
    std::vector<std::pair<uint16_t, uint32_t>> open;  // (depth, node in effect inside it)
    for (uint32_t k = 0; k < lane.size(); ++k) {
      const Slice& s = lane[k];
      while (!open.empty() && open.back().first >= s.depth) open.pop_back();
      uint32_t node = open.empty() ? 0 : open.back().second;
      if (s.kind == SliceKind::kAnnotation && !s.duplicate() &&
          !IsStepOrProfilerSpan(trace.str(trace.slice_name(s)))) {
        node = tree.Child(node, trace.str(trace.slice_name(s)), false);
        if (InWindows(input, s.start_ns)) {
          ++tree[node].time.instances;
          tree[node].time.cpu_ns += s.dur_ns;
        }
      }
      node_of[k] = node;
      open.emplace_back(s.depth, node);
    }
  }
  return index;
}

// The annotation spans on GPU streams (PyTorch's gpu_user_annotation: a host annotation's span
// over the work it launched, drawn on each stream that ran some) by source lane, sorted by start
// (longer first), with the annotation node of their path on the stream. Empty when the trace has
// none.
struct GpuSpan {
  int64_t start_ns, end_ns;
  uint32_t slice;
};
std::map<uint32_t, std::vector<GpuSpan>> GpuAnnotationSpans(const Trace& trace) {
  std::map<uint32_t, std::vector<GpuSpan>> spans;
  std::vector<uint32_t> source_lane;
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!LaunchesNothing(trace.tracks()[t].kind)) continue;
    const uint32_t first = trace.track_first_slice(t);
    const auto lane = trace.track_slices(t);
    for (uint32_t k = 0; k < lane.size(); ++k) {
      const Slice& s = lane[k];
      if (s.kind != SliceKind::kAnnotation || s.duplicate() || IsStepOrProfilerSpan(trace.str(trace.slice_name(s)))) {
        continue;
      }
      if (source_lane.empty()) source_lane = SourceLanes(trace);
      spans[source_lane[t]].push_back({s.start_ns, s.end_ns(), first + k});
    }
  }
  for (auto& [lane, list] : spans) {
    std::sort(list.begin(), list.end(), [](const GpuSpan& a, const GpuSpan& b) {
      return std::tie(a.start_ns, b.end_ns, a.slice) < std::tie(b.start_ns, a.end_ns, b.slice);
    });
  }
  return spans;
}

// The annotation in effect at each moment on any thread of a process: for work launched on a
// thread that has no annotation of its own around the call (PyTorch's autograd thread runs the
// backward pass that "## backward ##" on the main thread encloses). Where spans of several threads
// overlap, the one that started last (the innermost on its thread) holds.
class ProcessAnnotations {
 public:
  ProcessAnnotations(const Trace& trace, const AnnotationNodeIndex& node_of) {
    std::map<int32_t, std::vector<std::tuple<int64_t, int64_t, uint32_t>>> spans;  // host: (start, end, node)
    for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
      if (LaunchesNothing(trace.tracks()[t].kind)) continue;
      const uint32_t first = trace.track_first_slice(t);
      const auto lane = trace.track_slices(t);
      for (uint32_t k = 0; k < lane.size(); ++k) {
        const Slice& s = lane[k];
        if (s.kind != SliceKind::kAnnotation || s.dur_ns <= 0) continue;
        const uint32_t node = node_of[first + k];
        if (node != 0) spans[trace.HostOf(t)].emplace_back(s.start_ns, s.end_ns(), node);
      }
    }
    for (auto& [host, list] : spans) {
      // Sweep the starts and ends: the open span that started last is in effect.
      std::vector<std::tuple<int64_t, int, size_t>> edges;  // (time, 0 end | 1 start, span)
      for (size_t i = 0; i < list.size(); ++i) {
        edges.emplace_back(std::get<0>(list[i]), 1, i);
        edges.emplace_back(std::get<1>(list[i]), 0, i);
      }
      std::sort(edges.begin(), edges.end());
      std::set<std::pair<int64_t, size_t>> open;  // (start, span)
      std::vector<Segment>& segments = segments_[host];
      for (size_t e = 0; e < edges.size();) {
        const int64_t at = std::get<0>(edges[e]);
        for (; e < edges.size() && std::get<0>(edges[e]) == at; ++e) {
          const size_t span = std::get<2>(edges[e]);
          if (std::get<1>(edges[e]) == 1) {
            open.emplace(std::get<0>(list[span]), span);
          } else {
            open.erase({std::get<0>(list[span]), span});
          }
        }
        const uint32_t node = open.empty() ? 0 : std::get<2>(list[open.rbegin()->second]);
        if (segments.empty() || segments.back().node != node) segments.push_back({at, node});
      }
    }
  }
  // The node in effect at `time` in the process of `host`, 0 when none.
  uint32_t At(int32_t host, int64_t time) const {
    auto it = segments_.find(host);
    if (it == segments_.end()) return 0;
    const std::vector<Segment>& segments = it->second;
    auto after = std::upper_bound(segments.begin(), segments.end(), time,
                                  [](int64_t t, const Segment& s) { return t < s.begin_ns; });
    return after == segments.begin() ? 0 : std::prev(after)->node;
  }

 private:
  struct Segment {
    int64_t begin_ns;
    uint32_t node;
  };
  std::map<int32_t, std::vector<Segment>> segments_;
};

// The node of the GPU annotation spans around each piece of work of a stream, taken in start
// order: the spans open at its start, outermost first, make its path.
class GpuSpanCursor {
 public:
  GpuSpanCursor(const Trace& trace, const std::vector<GpuSpan>* spans, AnnotationTree& tree)
      : trace_(trace), spans_(spans), tree_(tree) {}
  uint32_t At(int64_t start_ns) {
    if (spans_ == nullptr) return 0;
    bool changed = false;
    for (; next_ < spans_->size() && (*spans_)[next_].start_ns <= start_ns; ++next_) {
      open_.push_back(next_);
      changed = true;
    }
    const auto closed = std::remove_if(open_.begin(), open_.end(),
                                       [&](size_t i) { return (*spans_)[i].end_ns <= start_ns; });
    changed = changed || closed != open_.end();
    open_.erase(closed, open_.end());
    if (changed) {
      node_ = 0;
      for (size_t i : open_) {
        node_ = tree_.Child(node_, trace_.str(trace_.slice_name(trace_.slices()[(*spans_)[i].slice])), false);
      }
    }
    return node_;
  }

 private:
  const Trace& trace_;
  const std::vector<GpuSpan>* spans_;
  AnnotationTree& tree_;
  size_t next_ = 0;
  std::vector<size_t> open_;  // in start order (outermost first)
  uint32_t node_ = 0;
};

}  // namespace

// ---- annotations -------------------------------------------------------------------------------

AnnotationReport ComputeAnnotationTime(const std::vector<GpuInput>& inputs) {
  AnnotationReport report;
  AnnotationTree tree;
  for (const GpuInput& input : inputs) {
    const Trace& trace = *input.trace;
    const LaunchIndex launch = LaunchOf(trace);
    const AnnotationNodeIndex node_of = AnnotationNodes(input, tree);
    const auto gpu_spans = GpuAnnotationSpans(trace);
    const ProcessAnnotations process_annotations(trace, node_of);
    std::vector<bool> op_counted(trace.slices().size(), false);  // name scopes: each launching op once
    for (const StreamWork& w : CollectWork(input)) {
      const auto spans = gpu_spans.find(w.lane);
      GpuSpanCursor gpu_span(trace, spans == gpu_spans.end() ? nullptr : &spans->second, tree);
      for (uint32_t i : w.slices) {
        const Slice& s = trace.slices()[i];
        ++report.work;
        report.gpu_ns += s.dur_ns;
        const int64_t r = launch[i];
        if (r >= 0) ++report.links.linked;
        // As the profiler drew it on the stream, where it did; else by the launch.
        uint32_t node = gpu_span.At(s.start_ns);
        if (node != 0) {
          ++report.gpu_annotation_work;
        } else if (r < 0) {
          ++report.unlinked_work;
          report.unlinked_gpu_ns += s.dur_ns;
          continue;
        } else {
          node = node_of[static_cast<uint32_t>(r)];
        }
        if (node == 0) {
          // Another thread's annotation over the call (the autograd thread's work in a backward span).
          const Slice& call = trace.slices()[static_cast<size_t>(r)];
          node = process_annotations.At(trace.HostOf(call.track), call.start_ns);
          if (node != 0) ++report.other_thread_work;
        }
        if (node == 0) {
          // No annotation around the launch: the name scopes of the op that launched it.
          const int64_t op = LaunchingOp(trace, static_cast<uint32_t>(r));
          if (op >= 0) {
            node = tree.Scopes(trace.str(trace.slice_name(trace.slices()[static_cast<size_t>(op)])));
            if (node != 0 && !op_counted[static_cast<size_t>(op)]) {
              op_counted[static_cast<size_t>(op)] = true;
              const Slice& o = trace.slices()[static_cast<size_t>(op)];
              for (uint32_t n = node; n != 0; n = tree[n].parent) {
                ++tree[n].time.instances;
                tree[n].time.cpu_ns += o.dur_ns;
              }
            }
          }
        }
        if (node == 0) {
          ++report.unannotated_work;
          report.unannotated_gpu_ns += s.dur_ns;
          continue;
        }
        ++tree[node].time.self_work;
        tree[node].time.self_gpu_ns += s.dur_ns;
        for (uint32_t n = node; n != 0; n = tree[n].parent) {
          AnnotationNode& a = tree[n];
          ++a.time.work;
          a.time.gpu_ns += s.dur_ns;
          a.work_by_device[{&trace, w.device}].emplace_back(s.start_ns, s.end_ns());
        }
      }
    }
  }
  report.links.work = report.work;
  report.rows = tree.Rows();
  return report;
}

// ---- kernel patterns ---------------------------------------------------------------------------

namespace {

// A pattern: `length` kernel name ids, as the bytes of the ids (short enough for the string's
// own buffer at the default length of 3).
std::string PatternKey(const int32_t* ids, size_t length) {
  return std::string(reinterpret_cast<const char*>(ids), length * sizeof(int32_t));
}

// The i-th kernel name id of a pattern key.
int32_t PatternId(const std::string& key, size_t i) {
  int32_t id;
  std::memcpy(&id, key.data() + i * sizeof(int32_t), sizeof(int32_t));
  return id;
}

// Saturating counts of every window's pattern by hash, in a fixed table: a pattern seen at least
// `n` times has a count of at least `n` (collisions only add), so a pattern below it can be
// skipped without being kept. A trace where almost every window is new (10^8 generated kernels)
// then keeps only the repeated ones instead of a map entry per window.
class PatternPrefilter {
 public:
  // Four slots per window, 32 MB at most (a fixed buffer: every slot of a big trace's table is
  // touched). A chance collision lets an unrepeated window through to the exact count, which
  // drops it: it costs a map entry and time, never a wrong answer.
  explicit PatternPrefilter(size_t windows)
      : counts_(std::bit_ceil(std::clamp<size_t>(windows * 4, 1024, size_t{1} << 25))) {}
  void Count(const int32_t* ids, size_t length) {
    uint8_t& count = counts_[Slot(ids, length)];
    if (count != 0xff) ++count;
  }
  bool MaySeen(const int32_t* ids, size_t length, int64_t times) const {
    return counts_[Slot(ids, length)] >= std::min<int64_t>(times, 0xff);
  }

 private:
  // The ids mixed as splitmix64 does: no string is built for a window that is then skipped.
  size_t Slot(const int32_t* ids, size_t length) const {
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < length; ++i) {
      h = (h ^ static_cast<uint32_t>(ids[i])) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 31;
    }
    return static_cast<size_t>(h) & (counts_.size() - 1);
  }
  std::vector<uint8_t> counts_;
};

// Every stream's kernels, in stream order, and kernel names as ids shared across inputs. A
// kernel's name id comes from its input's table by its name (a list of ids beside the kernels was
// 4 bytes a kernel more at the peak).
struct KernelStreams {
  struct Stream {
    size_t input;
    std::vector<uint32_t> kernels;
  };
  std::vector<Stream> streams;
  std::vector<std::string> names;                          // by id
  std::vector<std::vector<int32_t>> id_of_string_by_input;  // per input: string id -> name id, -1 unseen
  size_t windows = 0;                                      // windows of k kernels, over all streams

  // The name ids of the k kernels from position p of a stream, in `window` (k long).
  const int32_t* WindowIds(const std::vector<GpuInput>& inputs, const Stream& stream, size_t p,
                           std::vector<int32_t>& window) const {
    const Trace& trace = *inputs[stream.input].trace;
    const std::vector<int32_t>& id_of_string = id_of_string_by_input[stream.input];
    for (size_t q = 0; q < window.size(); ++q) {
      window[q] = id_of_string[trace.slice_name(trace.slices()[stream.kernels[p + q]])];
    }
    return window.data();
  }
};

KernelStreams CollectKernelStreams(const std::vector<GpuInput>& inputs, size_t k, KernelPatternReport& report) {
  KernelStreams out;
  std::unordered_map<std::string, int32_t> index;
  out.id_of_string_by_input.resize(inputs.size());
  for (size_t n = 0; n < inputs.size(); ++n) {
    const Trace& trace = *inputs[n].trace;
    std::vector<int32_t>& id_of_string = out.id_of_string_by_input[n];
    id_of_string.assign(trace.strings().size(), -1);
    for (const StreamWork& w : CollectWork(inputs[n])) {
      KernelStreams::Stream stream{n, {}};
      // At most every piece of work is a kernel: reserved so that the lists never grow by copies.
      stream.kernels.reserve(w.slices.size());
      for (uint32_t i : w.slices) {
        if (trace.slices()[i].kind != SliceKind::kKernel) continue;
        stream.kernels.push_back(i);
        ++report.links.work;
        const trace::StringId name = trace.slice_name(trace.slices()[i]);
        int32_t& id = id_of_string[name];
        if (id < 0) {
          auto [it, inserted] = index.try_emplace(std::string(trace.str(name)), static_cast<int32_t>(out.names.size()));
          if (inserted) out.names.push_back(it->first);
          id = it->second;
        }
      }
      report.kernels += static_cast<int64_t>(stream.kernels.size());
      if (stream.kernels.size() >= k) out.windows += stream.kernels.size() - k + 1;
      out.streams.push_back(std::move(stream));
    }
  }
  return out;
}

// One pattern's occurrences so far.
struct PatternTotals {
  int64_t count = 0, gpu_ns = 0, span_ns = 0, gap_ns = 0;
  size_t stream = SIZE_MAX;  // the stream and position where the last occurrence ended
  size_t end = 0;
  std::vector<std::pair<int32_t, int64_t>> host_ops;  // op id, occurrences
};

// Counts every occurrence of every pattern of k kernels (occurrences on one stream do not
// overlap), its GPU time, span and gaps, and the ops that launched it.
class PatternCounter {
 public:
  PatternCounter(const std::vector<GpuInput>& inputs, const KernelStreams& streams, size_t k,
                 const KernelPatternOptions& options)
      : inputs_(inputs), streams_(streams), k_(k), options_(options), window_(k),
        prefilter_(options.min_count > 1 ? streams.windows : 0) {}

  void Count(KernelPatternReport& report) {
    if (options_.min_count > 1) {
      for (const KernelStreams::Stream& stream : streams_.streams) {
        for (size_t p = 0; p + k_ <= stream.kernels.size(); ++p) {
          prefilter_.Count(streams_.WindowIds(inputs_, stream, p, window_), k_);
        }
      }
    }
    LaunchIndex launch;
    size_t launch_input = SIZE_MAX;
    for (size_t stream = 0; stream < streams_.streams.size(); ++stream) {
      const KernelStreams::Stream& work = streams_.streams[stream];
      if (launch_input != work.input) {
        launch = LaunchOf(*inputs_[work.input].trace);
        launch_input = work.input;
      }
      for (uint32_t kernel : work.kernels) report.links.linked += launch[kernel] >= 0 ? 1 : 0;
      for (size_t p = 0; p + k_ <= work.kernels.size(); ++p) AddWindow(stream, p, launch);
    }
  }

  std::unordered_map<std::string, PatternTotals>& patterns() { return patterns_; }
  const std::vector<std::string>& op_names() const { return op_names_; }

 private:
  void AddWindow(size_t stream, size_t p, const LaunchIndex& launch) {
    const KernelStreams::Stream& work = streams_.streams[stream];
    const Trace& trace = *inputs_[work.input].trace;
    const int32_t* ids = streams_.WindowIds(inputs_, work, p, window_);
    if (options_.min_count > 1 && !prefilter_.MaySeen(ids, k_, options_.min_count)) return;
    PatternTotals& acc = patterns_[PatternKey(ids, k_)];
    if (acc.stream == stream && p < acc.end) return;  // overlaps the previous occurrence
    acc.stream = stream;
    acc.end = p + k_;
    ++acc.count;
    busy_.clear();
    int64_t begin = INT64_MAX, end = INT64_MIN;
    for (size_t q = p; q < p + k_; ++q) {
      const Slice& s = trace.slices()[work.kernels[q]];
      acc.gpu_ns += s.dur_ns;
      busy_.emplace_back(s.start_ns, s.end_ns());
      begin = std::min(begin, s.start_ns);
      end = std::max(end, s.end_ns());
    }
    // Busy time of the occurrence: the union of its kernels (they may overlap on a stream's
    // lanes).
    const int64_t busy_ns = UnionLengthInPlace(busy_);
    acc.span_ns += end - begin;
    acc.gap_ns += (end - begin) - busy_ns;
    const int64_t r = launch[work.kernels[p]];
    const int64_t op = r < 0 ? -1 : trace.slices()[static_cast<size_t>(r)].kind == SliceKind::kOp
                                        ? r
                                        : EnclosingOp(trace, static_cast<uint32_t>(r));
    if (op >= 0) AddHostOp(acc, trace, trace.slice_name(trace.slices()[static_cast<size_t>(op)]));
  }

  void AddHostOp(PatternTotals& acc, const Trace& trace, trace::StringId op_name) {
    auto [it, inserted] = op_index_.try_emplace(std::string(trace.str(op_name)), static_cast<int32_t>(op_names_.size()));
    if (inserted) op_names_.push_back(it->first);
    const int32_t op_id = it->second;
    auto seen = std::find_if(acc.host_ops.begin(), acc.host_ops.end(),
                             [op_id](const auto& entry) { return entry.first == op_id; });
    if (seen == acc.host_ops.end()) {
      acc.host_ops.emplace_back(op_id, 1);
    } else {
      ++seen->second;
    }
  }

  const std::vector<GpuInput>& inputs_;
  const KernelStreams& streams_;
  const size_t k_;
  const KernelPatternOptions& options_;
  std::vector<int32_t> window_;
  PatternPrefilter prefilter_;
  std::unordered_map<std::string, PatternTotals> patterns_;
  std::unordered_map<std::string, int32_t> op_index_;
  std::vector<std::string> op_names_;
  Intervals busy_;
};

// The patterns seen at least min_count times, the top ones by count or time in the report.
void RankPatterns(std::unordered_map<std::string, PatternTotals>& patterns, const std::vector<std::string>& op_names,
                  const std::vector<std::string>& names, size_t k, const KernelPatternOptions& options,
                  KernelPatternReport& report) {
  // The ranking's ties go to the pattern whose ids come first (ids number kernel names in the
  // order they are first seen), so the report does not depend on the hash map's order.
  struct Ranked {
    const std::string* key;
    KernelPattern pattern;
  };
  std::vector<Ranked> ranked;
  for (auto& [key, acc] : patterns) {
    if (acc.count < options.min_count) continue;
    ++report.distinct_patterns;
    KernelPattern pattern;
    pattern.count = acc.count;
    pattern.gpu_ns = acc.gpu_ns;
    pattern.span_ns = acc.span_ns;
    pattern.gap_ns = acc.gap_ns;
    // The op launching it most often; ties to the first name in byte order.
    int64_t best = 0;
    for (const auto& [op, n] : acc.host_ops) {
      if (n > best || (n == best && op_names[static_cast<size_t>(op)] < pattern.host_op)) {
        best = n;
        pattern.host_op = op_names[static_cast<size_t>(op)];
      }
    }
    ranked.push_back(Ranked{&key, std::move(pattern)});
  }
  auto rank = [&](const KernelPattern& p) {
    return options.by_time ? std::make_tuple(p.gpu_ns, p.count) : std::make_tuple(p.count, p.gpu_ns);
  };
  auto ids_before = [&](const std::string& a, const std::string& b) {
    for (size_t i = 0; i < k; ++i) {
      if (PatternId(a, i) != PatternId(b, i)) return PatternId(a, i) < PatternId(b, i);
    }
    return false;
  };
  auto first = [&](const Ranked& a, const Ranked& b) {
    if (rank(a.pattern) != rank(b.pattern)) return rank(a.pattern) > rank(b.pattern);
    return ids_before(*a.key, *b.key);
  };
  const size_t shown = std::min(options.top, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(shown), ranked.end(), first);
  for (size_t i = 0; i < shown; ++i) {
    Ranked& entry = ranked[i];
    for (size_t q = 0; q < k; ++q) entry.pattern.kernels.push_back(names[static_cast<size_t>(PatternId(*entry.key, q))]);
    report.patterns.push_back(std::move(entry.pattern));
  }
}

}  // namespace

KernelPatternReport ComputeKernelPatterns(const std::vector<GpuInput>& inputs, const KernelPatternOptions& options) {
  KernelPatternReport report;
  report.length = std::max<size_t>(options.length, 1);
  const size_t k = report.length;
  const KernelStreams streams = CollectKernelStreams(inputs, k, report);
  PatternCounter counter(inputs, streams, k, options);
  counter.Count(report);
  RankPatterns(counter.patterns(), counter.op_names(), streams.names, k, options, report);
  return report;
}

}  // namespace stepscope::analysis
