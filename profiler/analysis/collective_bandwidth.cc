// Bandwidth per collective (collective_bandwidth.h): finds each trace's collectives and their
// sizes in whichever form its source recorded them, measures how much of each no compute hid,
// and adds them up per rank, device, kind, group size and message size.
#include "profiler/analysis/collective_bandwidth.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "profiler/analysis/step_analyses.h"
#include "profiler/analysis/stragglers.h"
#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {

using trace::Slice;
using trace::SliceArg;
using trace::SliceKind;
using trace::Trace;

namespace {

std::string Lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

bool Contains(std::string_view text, std::string_view needle) { return text.find(needle) != std::string_view::npos; }

// The string ids of argument keys in one trace, looked up once: a trace holds millions of
// arguments under a few dozen keys.
class KeyIds {
 public:
  explicit KeyIds(const Trace& trace) : trace_(trace) {}
  int64_t operator()(std::string_view key) {
    auto [it, inserted] = ids_.try_emplace(key, -1);
    if (inserted) it->second = trace_.strings().Find(key);
    return it->second;
  }

 private:
  const Trace& trace_;
  std::map<std::string_view, int64_t> ids_;
};

// A slice's free-form arguments by key (the Chrome JSON reader's).
class Args {
 public:
  Args(const Trace& trace, KeyIds& keys, uint32_t slice) : trace_(trace), keys_(keys), args_(trace.slice_args(slice)) {}
  const SliceArg* Find(std::string_view key) const {
    const int64_t id = keys_(key);
    if (id < 0) return nullptr;  // no argument of the trace has this key
    for (const SliceArg& arg : args_) {
      if (arg.key == static_cast<trace::StringId>(id)) return &arg;
    }
    return nullptr;
  }
  std::optional<int64_t> Number(std::string_view key) const {
    const SliceArg* arg = Find(key);
    if (arg == nullptr) return std::nullopt;
    if (arg->is_number) return arg->number;
    // A count written as text ("1048576") is still a count.
    const std::string text(trace_.str(arg->value));
    char* end = nullptr;
    const long long value = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0') return std::nullopt;
    return value;
  }
  std::string Text(std::string_view key) const {
    const SliceArg* arg = Find(key);
    return arg == nullptr || arg->is_number ? std::string() : std::string(trace_.str(arg->value));
  }
  bool empty() const { return args_.empty(); }

 private:
  const Trace& trace_;
  KeyIds& keys_;
  std::span<const SliceArg> args_;
};

// The first tensor's element count in a JSON list of shapes (`Input Dims`: "[[4, 16], [8]]" ->
// 64; "[[]]", a scalar -> 1); nullopt when the text holds no shape.
std::optional<int64_t> FirstShapeElements(std::string_view json) {
  const size_t outer = json.find('[');
  if (outer == std::string_view::npos) return std::nullopt;
  const size_t open = json.find('[', outer + 1);
  if (open == std::string_view::npos) return std::nullopt;
  const size_t close = json.find(']', open);
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view dims = json.substr(open + 1, close - open - 1);
  if (dims.find('[') != std::string_view::npos) return std::nullopt;  // a list of lists of shapes
  int64_t elements = 1;
  while (!dims.empty()) {
    const size_t comma = dims.find(',');
    const std::string item(dims.substr(0, comma));
    dims = comma == std::string_view::npos ? std::string_view() : dims.substr(comma + 1);
    char* end = nullptr;
    const long long value = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str()) {
      if (item.find_first_not_of(' ') == std::string::npos) continue;
      return std::nullopt;
    }
    if (value < 0) return std::nullopt;  // an unknown dimension
    if (__builtin_mul_overflow(elements, static_cast<int64_t>(value), &elements)) return std::nullopt;
  }
  return elements;
}

// The first string of a JSON list (`Input type`: "[\"float\", \"Scalar\"]" -> float).
std::string FirstString(std::string_view json) {
  const size_t open = json.find('"');
  if (open == std::string_view::npos) return std::string(json);
  const size_t close = json.find('"', open + 1);
  return close == std::string_view::npos ? std::string() : std::string(json.substr(open + 1, close - open - 1));
}

// elements x bytes each; -1 (unknown) for a negative count or one past int64 (a damaged record).
int64_t Bytes(int64_t elements, int64_t each) {
  int64_t bytes = 0;
  if (elements < 0 || __builtin_mul_overflow(elements, each, &bytes)) return -1;
  return bytes;
}

struct Found {
  CollectiveCall call;
  bool group_from_world = false;
};

// A collective record of stepscope-train: the StepStats payload's CollectiveInfo, or the args
// our Chrome JSON export writes for one.
std::optional<Found> FromStepscopeRecord(trace::DetailReader& details, uint32_t index, const Args& args) {
  Found found;
  CollectiveCall& call = found.call;
  if (const std::optional<trace::CollectiveDetails> c = details.Collective(index)) {
    call.name = std::string(c->kind);
    call.algorithm = std::string(c->algorithm);
    call.bytes = c->bytes > 0 ? c->bytes : -1;  // 0: not recorded
    call.group_size = c->group_size;
  } else if (const std::string kind = args.Text("collective"); !kind.empty()) {
    call.name = kind;
    call.algorithm = args.Text("algorithm");
    call.bytes = std::max<int64_t>(args.Number("bytes").value_or(-1), -1);
    call.group_size = static_cast<int32_t>(args.Number("group size").value_or(0));
  } else {
    return std::nullopt;
  }
  call.source = "stepscope";
  return found;
}

// NCCL's kernel names carry the algorithm and the protocol: "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
// -> "ring_ll", "ncclKernel_AllGather_TREE_SIMPLE_Sum_int8_t" -> "tree_simple"; empty when not.
std::string NcclAlgorithm(std::string_view name) {
  name = name.substr(0, name.find('('));
  std::vector<std::string_view> tokens;
  for (size_t at = 0; at <= name.size();) {
    const size_t next = std::min(name.find('_', at), name.size());
    tokens.push_back(name.substr(at, next - at));
    at = next + 1;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (std::string_view algorithm : {"RING", "TREE", "COLLNET", "NVLS", "NVLSTREE", "PAT"}) {
      if (tokens[i] != algorithm) continue;
      std::string text = Lower(algorithm);
      if (i + 1 < tokens.size() && (tokens[i + 1] == "LL" || tokens[i + 1] == "LL128" || tokens[i + 1] == "SIMPLE")) {
        text += "_" + Lower(tokens[i + 1]);
      }
      return text;
    }
  }
  return "";
}

// An NCCL kernel of a PyTorch profiler trace, sized by its collective args when it has them.
Found FromNcclKernel(std::string_view name, const Args& args, int32_t world_size) {
  Found found;
  CollectiveCall& call = found.call;
  call.source = "nccl_kernel";
  call.algorithm = NcclAlgorithm(name);
  const std::string collective = args.Text("Collective name");
  call.name = collective.empty() ? std::string(name) : collective;
  call.dtype = args.Text("dtype");
  const std::optional<int64_t> in = args.Number("In msg nelems"), out = args.Number("Out msg nelems");
  const int32_t element = DtypeBytes(call.dtype);
  if ((in || out) && element > 0) call.bytes = Bytes(std::max(in.value_or(0), out.value_or(0)), element);
  if (const std::optional<int64_t> group = args.Number("Group size")) {
    call.group_size = static_cast<int32_t>(*group);
  } else if (world_size > 0) {
    call.group_size = world_size;
    found.group_from_world = true;
  }
  return found;
}

// A gloo collective of a CPU PyTorch trace: its `gloo:<collective>` span, sized by its input.
// An all-gather's input is one rank's part: what it gathers is n of them.
Found FromGlooSpan(std::string_view name, const Args& args, int32_t world_size) {
  Found found;
  CollectiveCall& call = found.call;
  call.source = "gloo";
  call.name = std::string(name.substr(5));
  call.algorithm = "gloo";
  call.dtype = FirstString(args.Text("Input type"));
  if (world_size > 0) {
    call.group_size = world_size;
    found.group_from_world = true;
  }
  const std::optional<int64_t> elements = FirstShapeElements(args.Text("Input Dims"));
  const int32_t element = DtypeBytes(call.dtype);
  if (elements && element > 0) {
    const bool gathers = CollectiveKindOf(call.name) == CollectiveKind::kAllGather;
    call.bytes = Bytes(*elements, int64_t{element} * (gathers ? std::max(call.group_size, 1) : 1));
    if (gathers && call.group_size <= 0) call.bytes = -1;  // n unknown: what it gathers too
  }
  return found;
}

// Disjoint [start, end) intervals by start, and the length of their overlap with an interval.
class IntervalSet {
 public:
  void Add(int64_t start, int64_t end) { intervals_.emplace_back(start, end); }
  void Merge() {
    std::sort(intervals_.begin(), intervals_.end());
    std::vector<std::pair<int64_t, int64_t>> merged;
    for (const auto& [start, end] : intervals_) {
      if (!merged.empty() && start <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, end);
      } else {
        merged.emplace_back(start, end);
      }
    }
    intervals_ = std::move(merged);
  }
  int64_t Covered(int64_t start, int64_t end) const {
    auto it = std::upper_bound(intervals_.begin(), intervals_.end(), start,
                               [](int64_t t, const auto& interval) { return t < interval.second; });
    int64_t covered = 0;
    for (; it != intervals_.end() && it->first < end; ++it) {
      covered += std::min(end, it->second) - std::max(start, it->first);
    }
    return covered;
  }

 private:
  std::vector<std::pair<int64_t, int64_t>> intervals_;
};

// What a slice's name and op type say of it, worked out once per label (a trace has millions of
// kernels and a few thousand labels).
class LabelFlags {
 public:
  enum : uint8_t {
    kNccl = 1 << 0,    // "nccl" in the name's first 64 characters, in any case (an NCCL kernel)
    kFusion = 1 << 1,  // "fusion" in the name, in any case (a fusion-buffer copy)
    kGloo = 1 << 2,    // "gloo:<collective>" (gloo's span)
    // A host op that only starts or waits for communication (c10d's ops, PyTorch's
    // record_param_comms, its nccl:/gloo: spans, TensorFlow's collective ops).
    kCommOp = 1 << 3,
  };
  explicit LabelFlags(const Trace& trace) : trace_(trace), flags_(trace.labels().size(), kUnknown) {}
  uint8_t operator()(const Slice& s) {
    uint8_t& flags = flags_[s.label];
    if (flags == kUnknown) flags = Compute(s);
    return flags;
  }

 private:
  static constexpr uint8_t kUnknown = 0xff;
  uint8_t Compute(const Slice& s) const {
    const std::string_view name = trace_.str(trace_.slice_name(s));
    const std::string lower = Lower(name);
    uint8_t flags = 0;
    if (Contains(std::string_view(lower).substr(0, 64), "nccl")) flags |= kNccl;
    if (Contains(lower, "fusion")) flags |= kFusion;
    if (name.substr(0, 5) == "gloo:") flags |= kGloo;
    if (name.substr(0, 6) == "c10d::" || name == "record_param_comms" || name.substr(0, 5) == "nccl:" ||
        name.substr(0, 5) == "gloo:" || IsCollectiveOpType(trace_.str(trace_.slice_op_type(s)))) {
      flags |= kCommOp;
    }
    return flags;
  }
  const Trace& trace_;
  std::vector<uint8_t> flags_;
};

// Communication, not compute that could hide it: what IsCommunication counts (collective
// records, NCCL kernels, fusion-buffer copies, the collectives lane) and host ops that only start
// or wait for communication.
bool IsCommunicationOp(const Trace& trace, const Slice& s, uint8_t flags) {
  switch (s.kind) {
    case SliceKind::kCollective: return true;
    case SliceKind::kKernel: if (flags & LabelFlags::kNccl) return true; break;
    case SliceKind::kMemcpy: if (flags & LabelFlags::kFusion) return true; break;
    default: break;
  }
  return (flags & LabelFlags::kCommOp) != 0 || trace.tracks()[s.track].kind == trace::TrackKind::kCollective;
}

// The key of the lanes whose compute may hide a slice: its device, GPU lanes apart from host
// lanes (as ComputeOverlap keys them).
int64_t LanesKey(const Trace& trace, const Slice& s) {
  const bool gpu_lane = s.kind == SliceKind::kKernel || s.kind == SliceKind::kMemcpy ||
                        trace.tracks()[s.track].kind == trace::TrackKind::kGpuStream;
  return int64_t{ResourceOf(trace, s.track)} * 2 + (gpu_lane ? 1 : 0);
}

// Sets each call's exposed time: its time in which no compute ran on its lanes. Work nested in
// a communication slice of its own lane (gloo's copies inside its span) is the collective's.
void MeasureExposure(const Trace& trace, LabelFlags& label_flags, std::vector<Found>& calls) {
  std::map<int64_t, IntervalSet> compute;
  const auto slices = trace.slices();
  for (const Found& found : calls) compute.try_emplace(LanesKey(trace, slices[found.call.slice]));
  if (compute.empty()) return;
  std::set<int32_t> resources;
  for (const auto& [key, set] : compute) resources.insert(static_cast<int32_t>(key >> 1));
  for (uint32_t t = 0; t < trace.tracks().size(); ++t) {
    if (!resources.contains(ResourceOf(trace, t))) continue;
    int64_t comm_end = INT64_MIN;
    for (const Slice& s : trace.track_slices(t)) {
      if (s.duplicate()) continue;
      if (IsCommunicationOp(trace, s, label_flags(s))) {
        comm_end = std::max(comm_end, s.end_ns());
        continue;
      }
      if (s.start_ns < comm_end) continue;
      if (s.kind != SliceKind::kKernel && s.kind != SliceKind::kOp) continue;
      auto it = compute.find(LanesKey(trace, s));
      if (it != compute.end()) it->second.Add(s.start_ns, s.end_ns());
    }
  }
  for (auto& [key, set] : compute) set.Merge();
  for (Found& found : calls) {
    CollectiveCall& call = found.call;
    const IntervalSet& set = compute.at(LanesKey(trace, slices[call.slice]));
    call.exposed_ns = call.dur_ns - set.Covered(call.start_ns, call.start_ns + call.dur_ns);
  }
}

struct TraceCalls {
  int64_t unsized = 0, group_from_world = 0, records_on_kernels = 0;
};

// A collective record of stepscope-train and the NCCL kernel it launched (one correlation id)
// are one collective: kept once, as the kernel (the transfer's own time on the GPU) with what the
// record knows and the kernel does not (size, group). Returns the records so folded.
int64_t FoldRecordsIntoKernels(std::vector<Found>& found, const std::vector<uint64_t>& correlation) {
  std::map<uint64_t, size_t> record_of;
  for (size_t i = 0; i < found.size(); ++i) {
    if (found[i].call.source == "stepscope" && correlation[i] != 0) record_of.emplace(correlation[i], i);
  }
  if (record_of.empty()) return 0;
  std::vector<bool> folded(found.size(), false);
  for (size_t i = 0; i < found.size(); ++i) {
    CollectiveCall& kernel = found[i].call;
    if (kernel.source != "nccl_kernel" || correlation[i] == 0) continue;
    auto it = record_of.find(correlation[i]);
    if (it == record_of.end() || folded[it->second]) continue;
    const CollectiveCall& record = found[it->second].call;
    if (kernel.bytes < 0) kernel.bytes = record.bytes;
    if (record.group_size > 0 && (kernel.group_size <= 0 || found[i].group_from_world)) {
      kernel.group_size = record.group_size;
      found[i].group_from_world = false;
    }
    if (kernel.kind == CollectiveKind::kOther) {
      kernel.kind = record.kind;
      kernel.name = record.name;
    }
    folded[it->second] = true;
  }
  int64_t count = 0;
  size_t kept = 0;
  for (size_t i = 0; i < found.size(); ++i) {
    if (folded[i]) {
      ++count;
    } else {
      found[kept++] = std::move(found[i]);
    }
  }
  found.resize(kept);
  return count;
}

// The collectives of one trace, by start.
TraceCalls CollectCalls(const Trace& trace, int32_t rank, std::vector<CollectiveCall>& calls) {
  TraceCalls counts;
  trace::DetailReader details(trace, trace::kDetailCollective | trace::kDetailCorrelation);
  const bool records = details.MayHave(trace::kDetailCollective);
  const int32_t world_size = trace.step_info().world_size;
  const auto slices = trace.slices();
  LabelFlags label_flags(trace);
  KeyIds keys(trace);
  std::vector<Found> found_calls;
  std::vector<uint64_t> correlation;  // a StepStats node's, parallel to found_calls; 0 when none
  for (uint32_t i = 0; i < slices.size(); ++i) {
    const Slice& s = slices[i];
    if (s.duplicate()) continue;
    std::optional<Found> found;
    if (s.kind == SliceKind::kCollective) {
      const Args args(trace, keys, i);
      if (records || !args.empty()) found = FromStepscopeRecord(details, i, args);
    } else if (s.kind == SliceKind::kKernel || s.kind == SliceKind::kAnnotation) {
      const uint8_t flags = label_flags(s);
      if (s.kind == SliceKind::kKernel && (flags & LabelFlags::kNccl)) {
        found = FromNcclKernel(trace.str(trace.slice_name(s)), Args(trace, keys, i), world_size);
      } else if (s.kind == SliceKind::kAnnotation && (flags & LabelFlags::kGloo)) {
        found = FromGlooSpan(trace.str(trace.slice_name(s)), Args(trace, keys, i), world_size);
      }
    }
    if (!found) continue;
    CollectiveCall& call = found->call;
    call.slice = i;
    call.rank = rank;
    call.kind = CollectiveKindOf(call.name);
    if (call.kind != CollectiveKind::kOther) call.name = std::string(CollectiveKindName(call.kind));
    call.start_ns = s.start_ns;
    call.dur_ns = s.dur_ns;
    correlation.push_back(records ? details.Correlation(i) : 0);
    found_calls.push_back(*std::move(found));
  }
  counts.records_on_kernels = FoldRecordsIntoKernels(found_calls, correlation);
  MeasureExposure(trace, label_flags, found_calls);
  // In place (a trace may hold millions of collectives): by start, then slice.
  std::sort(found_calls.begin(), found_calls.end(), [](const Found& a, const Found& b) {
    return std::tie(a.call.start_ns, a.call.slice) < std::tie(b.call.start_ns, b.call.slice);
  });
  calls.reserve(calls.size() + found_calls.size());
  for (Found& found : found_calls) {
    counts.unsized += found.call.bytes < 0 ? 1 : 0;
    counts.group_from_world += found.group_from_world ? 1 : 0;
    calls.push_back(std::move(found.call));
  }
  return counts;
}

// Rows by rank, device (its path, so that a run's step files of one rank fill the same rows),
// name, group size, size, source, dtype and algorithm: the order they are listed in.
using RowKey = std::tuple<int32_t, std::string, std::string, int32_t, int64_t, std::string, std::string, std::string>;

void AddCalls(const Trace& trace, std::span<const CollectiveCall> calls, std::map<RowKey, CollectiveRow>& rows) {
  std::map<int32_t, std::string> path_of;  // the device's track -> its path, made once
  for (const CollectiveCall& call : calls) {
    const int32_t device = ResourceOf(trace, trace.slices()[call.slice].track);
    auto [path, inserted] = path_of.try_emplace(device);
    if (inserted && device >= 0) path->second = trace.TrackPath(static_cast<uint32_t>(device));
    CollectiveRow& row = rows[{call.rank, path->second, call.name, call.group_size, call.bytes, call.source, call.dtype,
                               call.algorithm}];
    if (row.count == 0) {
      row.rank = call.rank;
      row.device = path->second;
      row.name = call.name;
      row.source = call.source;
      row.algorithm = call.algorithm;
      row.dtype = call.dtype;
      row.group_size = call.group_size;
      row.bytes = call.bytes;
    }
    ++row.count;
    row.time_ns += call.dur_ns;
    row.exposed_ns += call.exposed_ns;
  }
}

std::vector<CollectiveRow> FinishRows(std::map<RowKey, CollectiveRow> by_key, const LinkPeak& link) {
  std::vector<CollectiveRow> rows;
  for (auto& [key, row] : by_key) {
    row.total_bytes = row.bytes >= 0 ? Bytes(row.bytes, row.count) : -1;
    if (row.total_bytes >= 0 && row.time_ns > 0) {
      row.algbw_bytes_per_s = static_cast<double>(row.total_bytes) * 1e9 / static_cast<double>(row.time_ns);
      if (const std::optional<double> factor = BusBandwidthFactor(CollectiveKindOf(row.name), row.group_size)) {
        row.busbw_bytes_per_s = *row.algbw_bytes_per_s * *factor;
        if (link.bytes_per_s) row.busbw_share_of_peak = *row.busbw_bytes_per_s / *link.bytes_per_s;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kReduce: return "reduce";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kSendRecv: return "send_recv";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kOther: break;
  }
  return "other";
}

CollectiveKind CollectiveKindOf(std::string_view name) {
  std::string letters;
  for (char c : name) {
    if (std::isalpha(static_cast<unsigned char>(c))) letters += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  // Longer names first: "reducescatter" and "allreduce" hold "reduce".
  if (Contains(letters, "reducescatter")) return CollectiveKind::kReduceScatter;
  if (Contains(letters, "allreduce")) return CollectiveKind::kAllReduce;
  if (Contains(letters, "allgather")) return CollectiveKind::kAllGather;
  if (Contains(letters, "alltoall")) return CollectiveKind::kAllToAll;
  if (Contains(letters, "broadcast") || Contains(letters, "bcast")) return CollectiveKind::kBroadcast;
  if (Contains(letters, "sendrecv") || letters == "send" || letters == "recv" || Contains(letters, "kernelsend") ||
      Contains(letters, "kernelrecv")) {
    return CollectiveKind::kSendRecv;
  }
  if (Contains(letters, "barrier")) return CollectiveKind::kBarrier;
  if (letters == "reduce" || Contains(letters, "kernelreduce")) return CollectiveKind::kReduce;
  return CollectiveKind::kOther;
}

std::optional<double> BusBandwidthFactor(CollectiveKind kind, int32_t group_size) {
  if (group_size < 1) return std::nullopt;
  const double n = group_size;
  switch (kind) {
    case CollectiveKind::kAllReduce: return 2 * (n - 1) / n;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll: return (n - 1) / n;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kSendRecv: return 1.0;
    default: return std::nullopt;
  }
}

int32_t DtypeBytes(std::string_view dtype) {
  std::string name = Lower(dtype);
  if (name.substr(0, 5) == "c10::") name = name.substr(5);
  if (name.substr(0, 3) == "dt_") name = name.substr(3);
  static const std::pair<std::string_view, int32_t> kSizes[] = {
      {"float", 4}, {"float32", 4}, {"double", 8}, {"float64", 8}, {"half", 2}, {"float16", 2},
      {"bfloat16", 2}, {"long", 8}, {"long int", 8}, {"int64", 8}, {"int", 4}, {"int32", 4},
      {"short", 2}, {"short int", 2}, {"int16", 2}, {"char", 1}, {"signed char", 1}, {"int8", 1},
      {"byte", 1}, {"unsigned char", 1}, {"uint8", 1}, {"bool", 1}, {"float8_e4m3fn", 1},
      {"float8_e5m2", 1}, {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1}, {"complexfloat", 8},
      {"complex64", 8}, {"complexdouble", 16}, {"complex128", 16}, {"uint16", 2}, {"uint32", 4},
      {"uint64", 8}};
  for (const auto& [known, bytes] : kSizes) {
    if (name == known) return bytes;
  }
  return 0;
}

std::optional<LinkPeak> NvlinkPeakOf(std::string_view device_name) {
  // NVLink totals (both directions, GB/s) of the SXM parts, from their datasheets.
  struct Row {
    std::string_view names;  // "|"-separated, lower case, without a leading "nvidia "
    double total_gbps;
    std::string_view source;
  };
  static constexpr Row kRows[] = {
      {"a100-sxm4-40gb|a100-sxm4-80gb", 600,
       "NVIDIA A100 Tensor Core GPU datasheet, SXM: NVLink 600 GB/s (both directions)"},
      {"h100 80gb hbm3|h100 sxm5 80gb|h100 sxm", 900,
       "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: NVLink 900 GB/s (both directions)"},
      {"h200|h200 sxm", 900, "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: NVLink 900 GB/s (both directions)"},
      {"b200", 1800, "NVIDIA HGX B200 specifications: NVLink 1.8 TB/s a GPU (both directions)"},
  };
  std::string name = Lower(device_name);
  if (name.substr(0, 7) == "nvidia ") name = name.substr(7);
  for (const Row& row : kRows) {
    std::string_view names = row.names;
    while (!names.empty()) {
      const size_t bar = names.find('|');
      if (names.substr(0, bar) == name) {
        return LinkPeak{row.total_gbps / 2 * 1e9, std::string(row.source) + ", halved: one direction"};
      }
      names = bar == std::string_view::npos ? std::string_view() : names.substr(bar + 1);
    }
  }
  return std::nullopt;
}

CollectiveBandwidth ComputeCollectiveBandwidth(std::span<const Trace> traces, const CollectiveOptions& options) {
  CollectiveBandwidth result;
  if (options.link_peak_bytes_per_s) {
    result.link = {options.link_peak_bytes_per_s, "--link-peak"};
  } else if (std::optional<LinkPeak> nvlink = NvlinkPeakOf(options.device_name)) {
    result.link = *std::move(nvlink);
  } else {
    result.link.source = options.device_name.empty()
                             ? "unknown: pass --link-peak GB/s"
                             : "unknown for " + options.device_name + ": pass --link-peak GB/s";
  }
  int64_t unsized = 0, group_from_world = 0, records_on_kernels = 0;
  std::map<RowKey, CollectiveRow> rows;
  for (size_t i = 0; i < traces.size(); ++i) {
    const Trace& trace = traces[i];
    const int32_t rank = trace.step_info().rank >= 0 ? trace.step_info().rank : static_cast<int32_t>(i);
    const size_t first = result.calls.size();
    const TraceCalls counts = CollectCalls(trace, rank, result.calls);
    unsized += counts.unsized;
    group_from_world += counts.group_from_world;
    records_on_kernels += counts.records_on_kernels;
    AddCalls(trace, std::span(result.calls).subspan(first), rows);
  }
  result.rows = FinishRows(std::move(rows), result.link);
  for (const CollectiveCall& call : result.calls) {
    ++result.totals.calls;
    result.totals.time_ns += call.dur_ns;
    result.totals.exposed_ns += call.exposed_ns;
    if (call.bytes >= 0) {
      ++result.totals.sized_calls;
      // Saturating: a damaged record's size must not wrap the total.
      if (__builtin_add_overflow(result.totals.bytes, call.bytes, &result.totals.bytes)) {
        result.totals.bytes = INT64_MAX;
      }
    }
  }
  if (result.calls.empty()) result.notes.push_back("no collectives in the trace");
  if (unsized > 0) {
    result.notes.push_back(std::to_string(unsized) +
                           " collective(s) without a recorded size: their time is counted, their bandwidth unknown");
  }
  if (records_on_kernels > 0) {
    result.notes.push_back(std::to_string(records_on_kernels) +
                           " collective record(s) counted as the NCCL kernel they launched (its time, their size)");
  }
  if (group_from_world > 0) {
    result.notes.push_back(std::to_string(group_from_world) +
                           " collective(s) without a group size: taken as the trace's world size");
  }
  return result;
}

CollectiveBandwidth ComputeCollectiveBandwidth(const Trace& trace, const CollectiveOptions& options) {
  return ComputeCollectiveBandwidth(std::span<const Trace>(&trace, 1), options);
}

}  // namespace stepscope::analysis
