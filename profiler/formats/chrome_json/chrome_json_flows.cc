// Binding the flows of a Chrome JSON import to their slices: flow events by category and id,
// launches by correlation id, and the check that every launch reached its kernel
// (chrome_json_importer_state.h).
#include "profiler/formats/chrome_json/chrome_json_importer_state.h"

#include <simdjson.h>
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>

#include "base/free_storage.h"
#include "base/saturating.h"

namespace stepscope::trace {

size_t ChromeEventImporter::Impl::LinkByCorrelation() {
  if (runtime_calls_.empty()) return 0;
  std::sort(runtime_calls_.begin(), runtime_calls_.end(),
            [](const RuntimeCall& a, const RuntimeCall& b) { return a.correlation < b.correlation; });
  // An id two calls carry (a file joining several processes' records) links nothing: its work
  // is left to the flow events.
  for (size_t i = 0; i < runtime_calls_.size();) {
    size_t j = i + 1;
    while (j < runtime_calls_.size() && runtime_calls_[j].correlation == runtime_calls_[i].correlation) ++j;
    if (j - i > 1) stats().Add("runtime_correlation_repeated", static_cast<int64_t>(j - i));
    i = j;
  }
  constexpr int64_t kNotFound = -1, kRepeated = -2;
  auto call_of = [&](int64_t correlation) -> int64_t {
    auto it = std::lower_bound(runtime_calls_.begin(), runtime_calls_.end(), correlation,
                               [](const RuntimeCall& c, int64_t id) { return c.correlation < id; });
    if (it == runtime_calls_.end() || it->correlation != correlation) return kNotFound;
    if (std::next(it) != runtime_calls_.end() && std::next(it)->correlation == correlation) return kRepeated;
    return it->slice;
  };
  const size_t before = builder_.flows().size();
  auto link = [&](int64_t correlation, uint32_t slice) {
    if (correlation <= 0) return;
    const int64_t call = call_of(correlation);
    if (call < 0) return;
    builder_.AddFlow(static_cast<uint32_t>(call), slice, FlowKind::kLaunch);
  };
  const KernelArgsTable& kernels = builder_.kernel_args_table();
  for (size_t row = 0; row < kernels.size(); ++row) {
    const KernelArgs args = kernels[row];
    link(args.correlation, args.slice);
  }
  for (const TransferArgs& args : builder_.transfer_args()) link(args.correlation, args.slice);
  for (const RuntimeCall& sync : syncs_) link(sync.correlation, sync.slice);
  FreeStorage(runtime_calls_);
  FreeStorage(syncs_);
  return builder_.flows().size() - before;
}

void ChromeEventImporter::Impl::CheckLaunchFlows(size_t correlation_links) {
  if (correlation_links == 0) return;
  std::vector<Flow>& flows = builder_.flows();
  std::vector<std::pair<uint32_t, uint32_t>> linked;  // (work, call), by work
  linked.reserve(correlation_links);
  for (size_t i = 0; i < correlation_links; ++i) linked.emplace_back(uint32_t{flows[i].to_slice}, flows[i].from_slice);
  std::sort(linked.begin(), linked.end());
  size_t kept = correlation_links;
  for (size_t i = correlation_links; i < flows.size(); ++i) {
    const Flow flow = flows[i];
    if (flow.kind == FlowKind::kLaunch) {
      const uint32_t work = flow.to_slice;
      auto it = std::lower_bound(linked.begin(), linked.end(), std::pair<uint32_t, uint32_t>(work, 0));
      if (it != linked.end() && it->first == work) {
        if (it->second != flow.from_slice) stats().Add("launch_flow_other_than_correlation_dropped");
        continue;
      }
    }
    flows[kept++] = flow;
  }
  flows.resize(kept);
}

void ChromeEventImporter::Impl::BindFlows() {
  if (open_flows_.empty() && done_flows_.empty()) return;
  const size_t track_count = builder_.tracks().size();
  const size_t slice_count = builder_.slice_count();
  constexpr uint32_t kNoParent = 0xffffffffu;
  std::vector<uint32_t> track_begin(track_count + 1, 0);
  std::vector<int64_t> longest(track_count, 0);
  std::vector<char> nests(track_count, 1);
  // Each slice's parent, made only for a trace where the scan below gives up (4 bytes a slice at
  // the import's peak otherwise).
  std::vector<uint32_t> parent;
  std::vector<uint32_t> open;  // the slices open around the current one, innermost last
  // The slices as packed: starts relative to the packing base, as the flow times below are.
  auto slice_at = [this](uint32_t i) -> const Slice& { return builder_.packed_slice(i); };
  const int64_t base_ns = builder_.packing_base_ns();
  auto walk_nesting = [&](auto&& visit) {
    open.clear();
    for (uint32_t i = 0; i < slice_count; ++i) {
      const Slice& slice = slice_at(i);
      if (i == 0 || slice_at(i - 1).track != slice.track) open.clear();
      while (!open.empty() && slice_at(open.back()).end_ns() <= slice.start_ns) open.pop_back();
      visit(i, slice, open.empty() ? kNoParent : open.back());
      open.push_back(i);
    }
  };
  walk_nesting([&](uint32_t, const Slice& slice, uint32_t enclosing) {
    ++track_begin[slice.track + 1];
    longest[slice.track] = std::max<int64_t>(longest[slice.track], slice.dur_ns);
    if (enclosing != kNoParent && slice.end_ns() > slice_at(enclosing).end_ns()) nests[slice.track] = 0;
  });
  for (size_t t = 0; t < track_count; ++t) track_begin[t + 1] += track_begin[t];
  auto start_of = [&](uint32_t i) -> int64_t { return slice_at(i).start_ns; };
  auto find = [&](const FlowEnd& end) -> int64_t {
    if (slot_tracks_[end.thread] < 0) return -1;
    const int64_t ts = SaturatingSub(end.ts, base_ns);
    const auto track = static_cast<size_t>(slot_tracks_[end.thread]);
    const uint32_t first = track_begin[track];
    const uint32_t last = track_begin[track + 1];
    // First slice of the track starting after the timestamp (or, for `f` without bp:e, at or after it).
    uint32_t lo = first, hi = last;
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo) / 2;
      const bool before = end.bind_enclosing ? start_of(mid) <= ts : start_of(mid) < ts;
      if (before) lo = mid + 1; else hi = mid;
    }
    if (!end.bind_enclosing) return lo == last ? -1 : lo;
    if (lo == first) return -1;
    if (nests[track]) {
      // The innermost slice holding the time is the last one starting before it that ends at or
      // after it (slices nest): mostly the first one looked at (a launch holds its flow's start,
      // a kernel its end). Past a few hundred siblings, the parents are walked instead.
      constexpr uint32_t kScan = 256;
      uint32_t p = lo;
      for (uint32_t scanned = 0; p != first && scanned < kScan; ++scanned) {
        --p;
        if (ts <= slice_at(p).end_ns()) return p;
      }
      if (p == first) return -1;
      if (parent.empty()) {
        parent.resize(slice_count);
        walk_nesting([&](uint32_t i, const Slice&, uint32_t enclosing) { parent[i] = enclosing; });
      }
      for (p = lo - 1; p != kNoParent; p = parent[p]) {
        if (ts <= slice_at(p).end_ns()) return p;
      }
      return -1;
    }
    int64_t best = -1;
    for (uint32_t p = lo; p != first;) {
      --p;
      const Slice& slice = slice_at(p);
      if (slice.start_ns + longest[track] < ts) break;
      if (ts <= slice.end_ns() && (best < 0 || slice.dur_ns < slice_at(static_cast<uint32_t>(best)).dur_ns)) {
        best = p;
      }
    }
    return best;
  };
  auto bind = [&](const FlowPair& pair) {
    if (!pair.start_set || !pair.end_set) {
      stats().Add("flow_unmatched_skipped");
      return;
    }
    const int64_t from = find(pair.start(flow_base_ns_));
    const int64_t to = find(pair.end(flow_base_ns_));
    if (from < 0 || to < 0) {
      stats().Add("flow_not_bound_skipped");
      return;
    }
    builder_.AddFlow(static_cast<uint32_t>(from), static_cast<uint32_t>(to),
                          pair.launch ? FlowKind::kLaunch : FlowKind::kDataflow);
  };
  // In the order the flows completed in the file, then the ones still open at its end. The
  // completed ones are bound from the last, their table shrinking as the flows grow (16 bytes a
  // pending flow, 8 a bound one), and put back in file order after.
  builder_.ReserveFlows(done_flows_.size() + open_flows_.size());
  const size_t first_flow = builder_.flows().size();
  for (size_t bound = 1; !done_flows_.empty(); ++bound) {
    bind(done_flows_.back());
    done_flows_.pop_back();
    if (bound % kFlowsPerShrink == 0) done_flows_.ShrinkToFit();
  }
  std::reverse(builder_.flows().begin() + static_cast<std::ptrdiff_t>(first_flow), builder_.flows().end());
  for (auto& [key, pair] : open_flows_) {
    pair.launch = IsLaunchCategory(key.category) ? 1 : 0;
    bind(pair);
  }
  FreeStorage(done_flows_);
  FreeStorage(open_flows_);
}

bool ChromeEventImporter::Impl::IsLaunchCategory(StringId category) {
  const std::string_view name = builder_.strings().Get(category);
  return name == "ac2g" || name == "async_cpu_to_gpu" || name == "async_gpu";
}

}  // namespace stepscope::trace
