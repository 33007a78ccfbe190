// CUPTI activity records -> TensorFlow GPU lanes. See the header for the names and layout.
#include "profiler/collect/cupti/gpu_activity_converter.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace stepscope::collect::cupti {
namespace {

std::string Demangle(const char* name) {
  if (name == nullptr || *name == '\0') return "unknown_kernel";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(name);
}

uint32_t NonNegative(int32_t value) { return value < 0 ? 0u : static_cast<uint32_t>(value); }

void SetTimes(int64_t start_ns, int64_t duration_ns, tf::NodeExecStats* node) {
  // GPU records last at least 1 µs in TF's µs fields; the ns fields keep the real duration.
  const int64_t duration_us = std::max<int64_t>(1, duration_ns / 1000);
  node->set_all_start_micros(start_ns / 1000);
  node->set_all_start_nanos(start_ns);
  node->set_op_start_rel_micros(0);
  node->set_op_start_rel_nanos(0);
  node->set_op_end_rel_micros(duration_us);
  node->set_op_end_rel_nanos(duration_ns);
  node->set_all_end_rel_micros(duration_us);
  node->set_all_end_rel_nanos(duration_ns);
}

// Op names and types, one copy per distinct string for the process (a run has a few thousand;
// they live as long as the process, so a converter's slots may point at them). Each thread
// remembers which interned string the caller's string object (by address) was last seen with,
// and checks the text is still the same: a trainer's node names live in its graph, so after the
// first step an op's names are found without a lock, an allocation or a copy.
const std::string* Intern(const std::string& text) {
  thread_local std::unordered_map<const std::string*, const std::string*> seen;
  if (auto it = seen.find(&text); it != seen.end() && *it->second == text) return it->second;
  static std::mutex mu;
  static auto* names = new std::unordered_set<std::string>();  // never freed: slots point here
  const std::string* interned;
  {
    std::lock_guard<std::mutex> lock(mu);
    interned = &*names->insert(text).first;  // node-based: the address stays
  }
  if (seen.size() >= (1u << 16)) seen.clear();  // callers passing temporaries: stay bounded
  seen[&text] = interned;
  return interned;
}

}  // namespace

template <typename CuptiMemcpy>
GpuActivityConverter::GpuRecord GpuActivityConverter::MemcpyRecord(const CuptiMemcpy& m) {
  GpuRecord r{RecordKind::kMemcpy};
  r.device_id = m.deviceId;
  r.stream_id = m.streamId;
  r.correlation_id = m.correlationId;
  r.start = m.start;
  r.end = m.end;
  r.bytes = m.bytes;
  r.copy_kind = m.copyKind;
  r.src_kind = m.srcKind;
  r.dst_kind = m.dstKind;
  return r;
}

std::string MemcpyKindName(uint8_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "Unknown";
  }
}

std::string MemoryKindName(uint8_t memory_kind) {
  switch (memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED: return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC: return "DeviceStatic";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return "ManagedStatic";
    default: return "Unknown";
  }
}

GpuActivityConverter::GpuActivityConverter(ClockAlignment clock, ConverterOptions options)
    : clock_(clock), options_(std::move(options)) {}

GpuActivityConverter::~GpuActivityConverter() {
  for (auto& chunk : op_chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

void GpuActivityConverter::BeginOps(uint64_t first_external_id) {
  first_op_id_ = first_external_id;
}

void GpuActivityConverter::RegisterOp(uint64_t external_id, const std::string& node_name,
                                      const std::string& op_type, int64_t host_start_ns) {
  const OpInfo op{Intern(node_name), Intern(op_type), host_start_ns};
  const uint64_t index = external_id - first_op_id_;  // wraps above the slots when below
  if (external_id >= first_op_id_ && index < kOpsPerChunk * kOpChunks) {
    std::atomic<OpInfo*>& slot_chunk = op_chunks_[index / kOpsPerChunk];
    OpInfo* chunk = slot_chunk.load(std::memory_order_acquire);
    if (chunk == nullptr) {
      auto* fresh = new OpInfo[kOpsPerChunk]();
      if (slot_chunk.compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
        chunk = fresh;
      } else {
        delete[] fresh;  // another thread installed it first; `chunk` is theirs
      }
    }
    // Each id is registered by the one thread that pushed it; Finish reads after the step.
    chunk[index % kOpsPerChunk] = op;
    return;
  }
  std::lock_guard<std::mutex> lock(overflow_mu_);
  overflow_ops_[external_id] = op;
}

const GpuActivityConverter::OpInfo* GpuActivityConverter::FindOp(uint64_t external_id) const {
  const uint64_t index = external_id - first_op_id_;
  if (external_id >= first_op_id_ && index < kOpsPerChunk * kOpChunks) {
    const OpInfo* chunk = op_chunks_[index / kOpsPerChunk].load(std::memory_order_acquire);
    if (chunk == nullptr) return nullptr;
    const OpInfo& op = chunk[index % kOpsPerChunk];
    return op.node_name != nullptr ? &op : nullptr;
  }
  auto it = overflow_ops_.find(external_id);
  return it != overflow_ops_.end() ? &it->second : nullptr;
}

void GpuActivityConverter::ClearOps() {
  for (auto& slot_chunk : op_chunks_) {
    if (OpInfo* chunk = slot_chunk.load(std::memory_order_relaxed)) {
      std::fill(chunk, chunk + kOpsPerChunk, OpInfo{});
    }
  }
  overflow_ops_.clear();
}

namespace {
uint64_t StreamKey(uint32_t cuda_device, uint32_t stream_id) {
  return (uint64_t{cuda_device} << 32) | stream_id;
}
}  // namespace

void GpuActivityConverter::SetStreamDevices(std::vector<StreamDevice> streams) {
  stream_devices_.clear();
  default_devices_.clear();
  for (const StreamDevice& s : streams) {
    stream_devices_[StreamKey(s.cuda_device, s.stream_id)] = s.tf_device;
    auto [it, added] = default_devices_.emplace(s.cuda_device, s.tf_device);
    if (!added) it->second = std::min(it->second, s.tf_device);
  }
}

uint32_t GpuActivityConverter::TfDeviceOf(uint32_t cuda_device, uint32_t stream_id) const {
  if (auto it = stream_devices_.find(StreamKey(cuda_device, stream_id));
      it != stream_devices_.end()) {
    return static_cast<uint32_t>(it->second);
  }
  if (auto it = default_devices_.find(cuda_device); it != default_devices_.end()) {
    return static_cast<uint32_t>(it->second);
  }
  return cuda_device;
}

void GpuActivityConverter::OnDropped(DropReason reason, uint64_t count) {
  switch (reason) {
    case DropReason::kCupti: stats_.dropped_by_cupti += count; break;
    case DropReason::kBufferBudget: stats_.dropped_buffers += count; break;
    case DropReason::kRecordLimit: stats_.dropped_by_record_limit += count; break;
  }
}

GpuActivityConverter::Correlation* GpuActivityConverter::CorrelationEntry(
    uint32_t correlation_id) {
  if (auto it = correlations_.find(correlation_id); it != correlations_.end()) return &it->second;
  if (correlations_.size() >= options_.max_correlations) {
    ++stats_.dropped_correlations;
    return nullptr;
  }
  return &correlations_[correlation_id];
}

void GpuActivityConverter::AddGpuRecord(GpuRecord record) {
  if (records_.size() >= options_.max_records) {
    ++stats_.dropped_by_record_limit;
    return;
  }
  switch (record.kind) {
    case RecordKind::kKernel: ++stats_.kernels; break;
    case RecordKind::kMemcpy: ++stats_.memcpys; break;
    case RecordKind::kMemset: ++stats_.memsets; break;
  }
  records_.push_back(std::move(record));
}

// The casts below are how CUPTI's activity API is read: `kind` says which struct the record is.
void GpuActivityConverter::OnRecord(const CUpti_Activity& record) {
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = reinterpret_cast<const KernelActivity&>(record);
      GpuRecord r{RecordKind::kKernel};
      r.device_id = k.deviceId;
      r.stream_id = k.streamId;
      r.correlation_id = k.correlationId;
      r.start = k.start;
      r.end = k.end;
      r.launch.set_grid_x(NonNegative(k.gridX));
      r.launch.set_grid_y(NonNegative(k.gridY));
      r.launch.set_grid_z(NonNegative(k.gridZ));
      r.launch.set_block_x(NonNegative(k.blockX));
      r.launch.set_block_y(NonNegative(k.blockY));
      r.launch.set_block_z(NonNegative(k.blockZ));
      r.launch.set_registers_per_thread(k.registersPerThread);
      r.launch.set_static_shared_memory(NonNegative(k.staticSharedMemory));
      r.launch.set_dynamic_shared_memory(NonNegative(k.dynamicSharedMemory));
      r.launch.set_stream_id(k.streamId);
      r.launch.set_device_id(k.deviceId);
      r.kernel_name = Demangle(k.name);  // CUPTI owns k.name; keep our own copy
      AddGpuRecord(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      AddGpuRecord(MemcpyRecord(reinterpret_cast<const MemcpyActivity&>(record)));
      return;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:  // peer-to-peer copies: the same fields
      AddGpuRecord(MemcpyRecord(reinterpret_cast<const PeerMemcpyActivity&>(record)));
      return;
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = reinterpret_cast<const MemsetActivity&>(record);
      GpuRecord r{RecordKind::kMemset};
      r.device_id = m.deviceId;
      r.stream_id = m.streamId;
      r.correlation_id = m.correlationId;
      r.start = m.start;
      r.end = m.end;
      r.bytes = m.bytes;
      r.src_kind = static_cast<uint8_t>(m.memoryKind);
      AddGpuRecord(std::move(r));
      return;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& e = reinterpret_cast<const ExternalCorrelationActivity&>(record);
      ++stats_.external_correlations;
      if (Correlation* c = CorrelationEntry(e.correlationId)) c->external_id = e.externalId;
      return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      // Runtime and driver calls alike: libraries launching through the driver API have only a
      // DRIVER record. A driver call recorded inside a runtime call shares its id and starts
      // later: the earliest start is the launch.
      const auto& api = reinterpret_cast<const ApiActivity&>(record);
      ++stats_.api_records;
      ++api_counts_[uint64_t{static_cast<uint32_t>(record.kind)} << 32 | api.cbid];
      if (api.start == 0) return;  // CUPTI could not time the call
      if (Correlation* c = CorrelationEntry(api.correlationId)) {
        c->api_start = c->api_start == 0 ? api.start : std::min(c->api_start, api.start);
      }
      return;
    }
    default:
      ++stats_.other_records;  // synchronization, overhead, ...: counted, not drawn
      return;
  }
}

tf::NodeExecStats GpuActivityConverter::ToNodeStats(const GpuRecord& r, int64_t clock_offset_ns,
                                                    uint64_t* external_id_out) const {
  const int64_t to_host = clock_.offset() + clock_offset_ns;
  tf::NodeExecStats node;
  SetTimes(static_cast<int64_t>(r.start) + to_host,
           r.end > r.start ? static_cast<int64_t>(r.end - r.start) : 0, &node);

  // The op behind the record: CUPTI correlation id -> external id -> registered op.
  std::string annotation;  // "<op node>:<OpType>", empty when not linked
  *external_id_out = 0;
  if (auto found = correlations_.find(r.correlation_id); found != correlations_.end()) {
    const Correlation& c = found->second;
    if (c.api_start != 0) {
      const int64_t scheduled = static_cast<int64_t>(c.api_start) + to_host;
      node.set_scheduled_micros(scheduled / 1000);
      node.set_scheduled_nanos(scheduled);
    }
    if (c.external_id != 0) {
      *external_id_out = c.external_id;
      node.set_correlation_id(c.external_id);
      if (const OpInfo* op = FindOp(c.external_id)) {
        annotation = *op->node_name + ":" + *op->op_type;
      }
    }
  }

  switch (r.kind) {
    case RecordKind::kKernel: {
      node.set_node_name(annotation.empty() ? r.kernel_name : annotation);
      const tf::KernelLaunch& l = r.launch;
      std::string label = r.kernel_name + " regs:" + std::to_string(l.registers_per_thread()) +
                          " shm:" +
                          std::to_string(uint64_t{l.static_shared_memory()} +
                                         l.dynamic_shared_memory()) +
                          " grid:" + std::to_string(l.grid_x()) + "," +
                          std::to_string(l.grid_y()) + "," + std::to_string(l.grid_z()) +
                          " block:" + std::to_string(l.block_x()) + "," +
                          std::to_string(l.block_y()) + "," + std::to_string(l.block_z());
      if (!annotation.empty()) label += "@@" + annotation;
      node.set_timeline_label(std::move(label));
      *node.mutable_kernel() = l;
      break;
    }
    case RecordKind::kMemcpy: {
      const std::string kind = MemcpyKindName(r.copy_kind);
      const std::string src = MemoryKindName(r.src_kind), dst = MemoryKindName(r.dst_kind);
      node.set_node_name((annotation.empty() ? std::string("unknown") : annotation) + ":MEMCPY" +
                         kind);
      node.set_timeline_label("MEMCPY" + kind + " " + std::to_string(r.bytes) + " bytes (" + src +
                              " to " + dst + ")");
      tf::MemcpyInfo* info = node.mutable_memcpy();
      info->set_kind(kind);
      info->set_bytes(static_cast<int64_t>(r.bytes));
      info->set_src_memory(src);
      info->set_dst_memory(dst);
      break;
    }
    case RecordKind::kMemset:
      node.set_node_name((annotation.empty() ? std::string("unknown") : annotation) + ":MEMSET");
      node.set_timeline_label("MEMSET " + std::to_string(r.bytes) + " bytes (" +
                              MemoryKindName(r.src_kind) + ")");
      break;
  }
  return node;
}

ConvertedStep GpuActivityConverter::Finish(int64_t clock_offset_ns) {
  std::lock_guard<std::mutex> lock(overflow_mu_);
  ConvertedStep out;
  std::map<std::string, std::vector<tf::NodeExecStats>> lanes;  // sorted by device name
  std::map<uint64_t, LaunchedOp> launched;
  for (const GpuRecord& r : records_) {
    uint64_t external_id = 0;
    tf::NodeExecStats node = ToNodeStats(r, clock_offset_ns, &external_id);
    if (const OpInfo* op = external_id != 0 ? FindOp(external_id) : nullptr) {
      ++stats_.linked_records;
      LaunchedOp& l = launched[external_id];
      l.external_id = external_id;
      l.node_name = *op->node_name;
      l.start_nanos = op->host_start_ns != 0 ? op->host_start_ns + clock_offset_ns : 0;
    } else {
      ++stats_.unlinked_records;
    }
    // Named by the TF device that owns the stream, not the CUDA ordinal (see the header).
    const std::string device =
        options_.device_prefix + std::to_string(TfDeviceOf(r.device_id, r.stream_id));
    if (r.kind == RecordKind::kMemcpy) lanes[device + "/memcpy"].push_back(node);
    lanes[device + "/stream:all"].push_back(node);
    lanes[device + "/stream:" + std::to_string(r.stream_id)].push_back(std::move(node));
  }
  for (auto& [device, nodes] : lanes) {
    std::stable_sort(nodes.begin(), nodes.end(),
                     [](const tf::NodeExecStats& a, const tf::NodeExecStats& b) {
                       return a.all_start_nanos() < b.all_start_nanos();
                     });
    tf::DeviceStepStats* dev = out.step_stats.add_dev_stats();
    dev->set_device(device);
    for (auto& node : nodes) *dev->add_node_stats() = std::move(node);
  }
  for (auto& [id, op] : launched) out.launched_ops.push_back(std::move(op));
  for (const auto& [key, count] : api_counts_) {
    stats_.api_ids.push_back(ApiIdCount{static_cast<CUpti_ActivityKind>(key >> 32),
                                        static_cast<uint32_t>(key), count});
  }
  std::sort(stats_.api_ids.begin(), stats_.api_ids.end(),
            [](const ApiIdCount& a, const ApiIdCount& b) {
              if (a.count != b.count) return a.count > b.count;
              if (a.kind != b.kind) return a.kind < b.kind;
              return a.cbid < b.cbid;
            });
  out.stats = stats_;
  api_counts_.clear();

  records_.clear();
  correlations_.clear();
  ClearOps();
  stats_ = {};
  return out;
}

size_t GpuActivityConverter::LinkOps(const std::vector<LaunchedOp>& launched_ops,
                                     tf::StepStats* host_stats) {
  std::multimap<std::string_view, const LaunchedOp*> by_name;
  for (const LaunchedOp& op : launched_ops) by_name.emplace(op.node_name, &op);
  size_t marked = 0;
  for (tf::DeviceStepStats& dev : *host_stats->mutable_dev_stats()) {
    for (tf::NodeExecStats& node : *dev.mutable_node_stats()) {
      if (node.correlation_id() != 0 || node.has_kernel() || node.has_memcpy()) continue;
      auto [first, last] = by_name.equal_range(node.node_name());
      for (auto it = first; it != last; ++it) {
        const LaunchedOp& op = *it->second;
        if (op.start_nanos != 0 && op.start_nanos != node.all_start_nanos()) continue;
        node.set_correlation_id(op.external_id);
        ++marked;
        by_name.erase(it);  // one host op per launch id
        break;
      }
    }
  }
  return marked;
}

}  // namespace stepscope::collect::cupti
