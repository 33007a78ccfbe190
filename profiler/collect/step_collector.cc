// Run-time per-op step stats (step_collector.h): per-thread buffers turned into RunMetadata.
#include "profiler/collect/step_collector.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <thread>

namespace stepscope::collect {

struct StepCollector::ThreadBuffer {
  uint32_t thread_id = 0;
  uint64_t generation = 0;
  bool in_op = false;
  std::vector<OpRecord> ops;
  std::vector<TensorRecord> tensors;
  std::vector<TensorRecord> inputs;
  std::vector<AllocationRecord> allocations;
  // Allocation records before this thread's first op of the step (nothing to attribute them to).
  size_t unattributed_allocations = 0;
};

namespace {

std::atomic<uint64_t> next_collector_id{1};
std::atomic<uint32_t> next_thread_id{1};

struct ThreadCache {
  uint64_t collector_id = 0;
  void* buffer = nullptr;
};
thread_local ThreadCache thread_cache;

// A stable small id per OS thread (what TF's NodeExecStats.thread_id carries).
uint32_t ThisThreadId() {
  thread_local const uint32_t id = next_thread_id.fetch_add(1, std::memory_order_relaxed);
  return id;
}

// Scheduled = start, and the op runs for the whole record: TF's µs and ns fields alike.
void SetTimes(int64_t start_ns, int64_t duration_ns, tf::NodeExecStats& node) {
  const int64_t duration = std::max<int64_t>(0, duration_ns);
  node.set_all_start_micros(start_ns / 1000);
  node.set_all_start_nanos(start_ns);
  node.set_scheduled_micros(start_ns / 1000);
  node.set_scheduled_nanos(start_ns);
  node.set_op_start_rel_micros(0);
  node.set_op_start_rel_nanos(0);
  node.set_op_end_rel_micros(duration / 1000);
  node.set_op_end_rel_nanos(duration);
  node.set_all_end_rel_micros(duration / 1000);
  node.set_all_end_rel_nanos(duration);
}

std::string Megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1fMB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

StepCollector::StepCollector(CollectorOptions options)
    : options_(options), id_(next_collector_id.fetch_add(1, std::memory_order_relaxed)) {}

StepCollector::~StepCollector() = default;

StepCollector::ThreadBuffer& StepCollector::ThisThread() {
  ThreadCache& cache = thread_cache;
  ThreadBuffer* buffer = nullptr;
  if (cache.collector_id == id_) {
    buffer = static_cast<ThreadBuffer*>(cache.buffer);
  } else {
    // First record of this thread for this collector: register a buffer (the only lock).
    std::lock_guard<std::mutex> lock(registry_mu_);
    buffers_.push_back(std::make_unique<ThreadBuffer>());
    buffer = buffers_.back().get();
    buffer->thread_id = ThisThreadId();
    buffer->ops.reserve(1024);
    buffer->tensors.reserve(2048);
    buffer->allocations.reserve(4096);
    cache.collector_id = id_;
    cache.buffer = buffer;
  }
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  if (buffer->generation != generation) {  // a new step: forget the last one, keep capacity
    buffer->generation = generation;
    buffer->ops.clear();
    buffer->tensors.clear();
    buffer->inputs.clear();
    buffer->allocations.clear();
    buffer->unattributed_allocations = 0;
    buffer->in_op = false;
  }
  return *buffer;
}

void StepCollector::BeginStep(int64_t step) {
  step_ = step;
  {
    std::lock_guard<std::mutex> lock(registry_mu_);
    collectives_.clear();
    copies_.clear();
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);
  dropped_.store(0, std::memory_order_relaxed);
  recording_.store(true, std::memory_order_release);
}

void StepCollector::BeginOp(const std::string* device, const std::string* node_name,
                            const std::string* op_type, const std::vector<std::string>* inputs,
                            int64_t start_ns) {
  ThreadBuffer& buffer = ThisThread();
  if (buffer.ops.size() >= options_.max_ops_per_thread) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    buffer.in_op = false;
    return;
  }
  OpRecord op;
  op.device = device;
  op.node_name = node_name;
  op.op_type = op_type;
  op.inputs = inputs;
  op.thread_id = buffer.thread_id;
  op.start_ns = start_ns;
  op.end_ns = start_ns;
  op.first_output = static_cast<uint32_t>(buffer.tensors.size());
  op.first_allocation = static_cast<uint32_t>(buffer.allocations.size());
  op.first_input = static_cast<uint32_t>(buffer.inputs.size());
  buffer.ops.push_back(op);
  buffer.in_op = true;
}

void StepCollector::AddOutput(const TensorRecord& tensor) {
  ThreadBuffer& buffer = ThisThread();
  if (!buffer.in_op) return;
  buffer.tensors.push_back(tensor);
  ++buffer.ops.back().num_outputs;
}

void StepCollector::AddInput(const TensorRecord& tensor) {
  ThreadBuffer& buffer = ThisThread();
  if (!buffer.in_op) return;
  buffer.inputs.push_back(tensor);
  ++buffer.ops.back().num_inputs;
}

void StepCollector::EndOp(int64_t end_ns) {
  ThreadBuffer& buffer = ThisThread();
  if (!buffer.in_op) return;
  buffer.ops.back().end_ns = end_ns;
  buffer.in_op = false;
}

void StepCollector::RecordAllocation(const AllocationRecord& record) {
  ThreadBuffer& buffer = ThisThread();
  if (buffer.allocations.size() >= options_.max_allocations_per_thread) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  buffer.allocations.push_back(record);
  // The current op, or the last one this thread ran: its records are the buffer's tail.
  if (!buffer.ops.empty()) {
    ++buffer.ops.back().num_allocations;
  } else {
    ++buffer.unattributed_allocations;
  }
}

void StepCollector::RecordCollective(CollectiveRecord record) {
  if (!recording()) return;
  std::lock_guard<std::mutex> lock(registry_mu_);
  collectives_.push_back(std::move(record));
}

void StepCollector::RecordCopy(CopyRecord record) {
  if (!recording()) return;
  std::lock_guard<std::mutex> lock(registry_mu_);
  copies_.push_back(std::move(record));
}

std::string TimelineLabel(const std::string& node_name, const std::string& op_type,
                          const std::vector<std::string>* inputs) {
  std::string label = node_name + " = " + op_type + "(";
  if (inputs != nullptr) {
    for (size_t i = 0; i < inputs->size(); ++i) {
      if (i) label += ", ";
      label += (*inputs)[i];
    }
  }
  return label + ")";
}

tf::RunMetadata StepCollector::FinishStep(int64_t clock_offset_ns) {
  recording_.store(false, std::memory_order_release);
  tf::RunMetadata metadata;
  std::map<std::string, tf::DeviceStepStats*> devices;  // sorted by device name
  struct Placed {
    const OpRecord* op;
    const ThreadBuffer* buffer;
  };
  std::map<std::string, std::vector<Placed>> ops_by_device;
  {
    std::lock_guard<std::mutex> lock(registry_mu_);
    for (const auto& buffer : buffers_) {
      if (buffer->generation != generation_.load()) continue;  // this thread ran nothing this step
      for (const OpRecord& op : buffer->ops) ops_by_device[*op.device].push_back({&op, buffer.get()});
    }
    for (const CollectiveRecord& c : collectives_) ops_by_device[*c.device];  // device may have no ops
  }
  for (auto& [device, placed] : ops_by_device) {
    std::sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) {
      return a.op->start_ns < b.op->start_ns;
    });
    tf::DeviceStepStats* dev = metadata.mutable_step_stats()->add_dev_stats();
    dev->set_device(device);
    for (const Placed& p : placed) {
      const OpRecord& op = *p.op;
      tf::NodeExecStats* node = dev->add_node_stats();
      node->set_node_name(*op.node_name);
      node->set_op_type(*op.op_type);
      SetTimes(op.start_ns + clock_offset_ns, op.end_ns - op.start_ns, *node);
      node->set_thread_id(op.thread_id);
      (*dev->mutable_thread_names())[op.thread_id] = "executor thread " + std::to_string(op.thread_id);

      // Outputs with their allocations.
      for (uint32_t k = 0; k < op.num_outputs; ++k) {
        const TensorRecord& t = p.buffer->tensors[op.first_output + k];
        tf::NodeOutput* output = node->add_output();
        output->set_slot(static_cast<int32_t>(k));
        tf::TensorDescription* desc = output->mutable_tensor_description();
        desc->set_dtype(static_cast<tf::DataType>(t.dtype));
        for (int d = 0; d < t.rank; ++d) desc->mutable_shape()->add_dim()->set_size(t.dims[static_cast<size_t>(d)]);
        tf::AllocationDescription* alloc = desc->mutable_allocation_description();
        alloc->set_requested_bytes(t.requested_bytes);
        alloc->set_allocated_bytes(t.allocated_bytes);
        if (t.allocator != nullptr) alloc->set_allocator_name(*t.allocator);
        alloc->set_allocation_id(t.allocation_id);
        alloc->set_has_single_reference(t.single_reference);
        alloc->set_ptr(t.ptr);
      }

      for (uint32_t k = 0; k < op.num_inputs; ++k) {
        const TensorRecord& t = p.buffer->inputs[op.first_input + k];
        tf::TensorDescription* desc = node->add_input_tensor();
        desc->set_dtype(static_cast<tf::DataType>(t.dtype));
        for (int d = 0; d < t.rank; ++d) desc->mutable_shape()->add_dim()->set_size(t.dims[static_cast<size_t>(d)]);
      }

      // Memory per allocator touched: totals, peak and live of this op's own allocations, the
      // records with their times, and the allocator's in-use bytes after the op's last record.
      std::string memory_prefix;
      int64_t temp_bytes = 0;
      for (uint32_t k = 0; k < op.num_allocations; ++k) {
        const AllocationRecord& r = p.buffer->allocations[op.first_allocation + k];
        tf::AllocatorMemoryUsed* used = nullptr;
        for (auto& m : *node->mutable_memory()) {
          if (m.allocator_name() == *r.allocator) used = &m;
        }
        if (used == nullptr) {
          used = node->add_memory();
          used->set_allocator_name(*r.allocator);
        }
        if (r.delta_bytes > 0) used->set_total_bytes(used->total_bytes() + r.delta_bytes);
        used->set_live_bytes(used->live_bytes() + r.delta_bytes);
        used->set_peak_bytes(std::max(used->peak_bytes(), used->live_bytes()));
        used->set_allocator_bytes_in_use(r.bytes_in_use_after);
        tf::AllocationRecord* record = used->add_allocation_records();
        record->set_alloc_micros((r.time_ns + clock_offset_ns) / 1000);
        record->set_alloc_bytes(r.delta_bytes);
      }
      int64_t output_bytes = 0;
      for (uint32_t k = 0; k < op.num_outputs; ++k) {
        output_bytes += p.buffer->tensors[op.first_output + k].allocated_bytes;
      }
      for (const auto& m : node->memory()) {
        memory_prefix += "[" + m.allocator_name() + " " + Megabytes(m.total_bytes()) + " " +
                         Megabytes(m.peak_bytes()) + "] ";
        temp_bytes += m.total_bytes();
      }
      // Temporary memory: what the op allocated beyond its outputs (workspaces).
      node->mutable_memory_stats()->set_temp_memory_size(std::max<int64_t>(0, temp_bytes - output_bytes));
      node->set_timeline_label(memory_prefix + TimelineLabel(*op.node_name, *op.op_type, op.inputs));
      if (op.inputs != nullptr) {
        for (const std::string& input : *op.inputs) node->add_input(input);
      }
    }
  }
  // Collectives on each device's communication lane, merged into start order.
  for (auto& dev : *metadata.mutable_step_stats()->mutable_dev_stats()) {
    bool added = false;
    for (const CollectiveRecord& c : collectives_) {
      if (*c.device != dev.device()) continue;
      tf::NodeExecStats* node = dev.add_node_stats();
      node->set_node_name(c.name);
      node->set_op_type(c.op_type);
      SetTimes(c.start_ns + clock_offset_ns, c.end_ns - c.start_ns, *node);
      node->set_thread_id(kCollectiveLaneThreadId);
      node->set_timeline_label(c.name + " = " + c.op_type + "()");
      tf::CollectiveInfo* info = node->mutable_collective();
      info->set_kind(c.op_type == "ALLREDUCE" ? "all_reduce" : c.op_type);
      info->set_algorithm(c.algorithm);
      info->set_bytes(c.bytes);
      info->set_group_size(c.group_size);
      for (int peer = 0; peer < c.group_size; ++peer) info->add_peers(peer);
      info->set_reduction(c.reduction);
      info->set_fused_tensors(c.fused_tensors);
      added = true;
    }
    if (added) {
      (*dev.mutable_thread_names())[kCollectiveLaneThreadId] = "collectives";
      std::stable_sort(dev.mutable_node_stats()->begin(), dev.mutable_node_stats()->end(),
                       [](const tf::NodeExecStats& a, const tf::NodeExecStats& b) {
                         return a.all_start_nanos() < b.all_start_nanos();
                       });
    }
  }
  // Copies on each destination device's memcpy lane, as TF's tracer records them.
  std::vector<CopyRecord> copies;
  {
    std::lock_guard<std::mutex> lock(registry_mu_);  // a copy may still be ending on another thread
    copies.swap(copies_);
  }
  std::map<std::string, std::vector<const CopyRecord*>> copies_by_lane;
  for (const CopyRecord& c : copies) copies_by_lane[*c.device + "/memcpy"].push_back(&c);
  for (auto& [lane, on_lane] : copies_by_lane) {
    std::stable_sort(on_lane.begin(), on_lane.end(), [](const CopyRecord* a, const CopyRecord* b) {
      return a->start_ns < b->start_ns;
    });
    tf::DeviceStepStats* dev = metadata.mutable_step_stats()->add_dev_stats();
    dev->set_device(lane);
    for (const CopyRecord* c : on_lane) {
      tf::NodeExecStats* node = dev->add_node_stats();
      node->set_node_name(c->annotation + ":MEMCPY" + c->kind);
      SetTimes(c->start_ns + clock_offset_ns, c->end_ns - c->start_ns, *node);
      node->set_timeline_label("MEMCPY" + c->kind + " " + std::to_string(c->bytes) + " bytes (" +
                               c->src_memory + " to " + c->dst_memory + ")");
      tf::MemcpyInfo* info = node->mutable_memcpy();
      info->set_kind(c->kind);
      info->set_bytes(c->bytes);
      info->set_src_memory(c->src_memory);
      info->set_dst_memory(c->dst_memory);
    }
  }
  tf::TraceSession* session = metadata.mutable_stepscope_session();
  session->set_step(step_);
  session->set_dropped_records(dropped_.load(std::memory_order_relaxed));
  return metadata;
}

}  // namespace stepscope::collect
