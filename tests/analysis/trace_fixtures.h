// Traces built in memory for analysis tests, where the right answer is known by construction.
#pragma once

#include <string>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis::testing {

// A small builder: tracks by name, slices by (track, start, end, name, op, kind). Times are ns.
class TraceMaker {
 public:
  uint32_t Host(const std::string& name) { return Track(name, -1, trace::TrackKind::kHost, false); }
  uint32_t Device(const std::string& name, uint32_t host) {
    return Track(name, static_cast<int32_t>(host), trace::TrackKind::kDevice, false);
  }
  uint32_t Lane(const std::string& name, uint32_t parent, trace::TrackKind kind, bool concurrent = true) {
    return Track(name, static_cast<int32_t>(parent), kind, concurrent);
  }
  uint32_t Slice(uint32_t track, int64_t start, int64_t end, const std::string& name, const std::string& op = "",
                 trace::SliceKind kind = trace::SliceKind::kOp, uint8_t flags = 0) {
    trace::SliceRecord s;
    s.track = track;
    s.start_ns = start;
    s.dur_ns = end - start;
    s.name = builder_.Intern(name);
    s.op_type = builder_.Intern(op.empty() ? name : op);
    s.kind = kind;
    s.flags = flags;
    return builder_.AddSlice(s);
  }
  void Flow(uint32_t from, uint32_t to, trace::FlowKind kind = trace::FlowKind::kDataflow) {
    builder_.AddFlow(from, to, kind);
  }
  trace::TraceBuilder& builder() { return builder_; }
  trace::Trace Build() && { return std::move(builder_).Build(); }

 private:
  uint32_t Track(const std::string& name, int32_t parent, trace::TrackKind kind, bool concurrent) {
    trace::Track t;
    t.name = builder_.Intern(name);
    t.full_name = builder_.Intern(name);
    t.parent = parent;
    t.kind = kind;
    t.concurrent = concurrent;
    return builder_.AddTrack(t);
  }
  trace::TraceBuilder builder_;
};

// Slice index of the (first) slice with this name, or -1.
inline int64_t FindSlice(const trace::Trace& trace, std::string_view name) {
  for (uint32_t i = 0; i < trace.slices().size(); ++i) {
    if (trace.str(trace.slice_name(trace.slices()[i])) == name) return i;
  }
  return -1;
}

}  // namespace stepscope::analysis::testing
