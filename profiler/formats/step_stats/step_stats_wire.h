// Binary step stats read straight from the wire (docs/formats.md §1.5): one pass over the
// RunMetadata / StepStats bytes reads the fields the import needs of each NodeExecStats and
// keeps the node's own bytes (already its serialisation) for the node store, so no message is
// built per node. Only the rest of the RunMetadata (devices, thread names, session, graphs) is
// parsed by protobuf.
//
// The scan takes only input that protobuf's parser would take as it is: well-formed, every
// field of our schema with its declared wire type, every string valid UTF-8, a device and a name
// on each device and node. Anything else (damage, strings to repair, odd encodings) makes it
// decline, and the caller parses the file with protobuf, which names the problem or repairs it
// as it always did; so both ways give the same Trace or the same error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/formats/step_stats/node_store.h"
#include "profiler/trace/trace.h"

namespace stepscope::tf {
class RunMetadata;
}

namespace stepscope::trace {

// One AllocationRecord, named as protobuf's accessors so that the import reads both forms alike.
struct WireAllocationRecord {
  int64_t micros = 0;
  int64_t bytes = 0;
  int64_t alloc_micros() const { return micros; }
  int64_t alloc_bytes() const { return bytes; }
};

// One AllocatorMemoryUsed: what the allocator counters read.
struct WireAllocatorMemory {
  std::string_view allocator;
  int64_t peak = 0;
  int64_t in_use = 0;
  std::span<const WireAllocationRecord> records;  // into WireStepStats::records, set after the scan
  uint32_t first_record = 0, record_count = 0;    // the same, while the scan still adds records
  std::string_view allocator_name() const { return allocator; }
  int64_t peak_bytes() const { return peak; }
  int64_t allocator_bytes_in_use() const { return in_use; }
  std::span<const WireAllocationRecord> allocation_records() const { return records; }
};

// One NodeExecStats: what slices, flows and counters read. Strings are (offset, size) in the
// input, which holds at most INT32_MAX bytes (protobuf's limit, which the other path keeps).
struct WireNode {
  uint32_t name_at = 0, name_size = 0;        // node_name
  uint32_t label_at = 0, label_size = 0;      // timeline_label
  uint32_t op_type_at = 0, op_type_size = 0;  // op_type
  int64_t start_ns = 0;                       // NodeStartNs
  int64_t dur_ns = 0;                         // NodeDurationNs
  uint64_t correlation_id = 0;
  uint32_t thread_id = 0;
  uint32_t fields = 0;  // NodeField bits (node_store.h)
  uint32_t first_input = 0, input_count = 0;
  uint32_t first_memory = 0, memory_count = 0;
};

struct WireStepStats {
  SourceFormat format = SourceFormat::kRunMetadataBinary;
  // The rest of the RunMetadata (without node_stats, as wire bytes) and the node store being
  // filled with each node's bytes (its blocks compress while the import goes on).
  std::string rest;
  std::unique_ptr<NodeStoreWriter> store;
  std::shared_ptr<tf::RunMetadata> rest_message;  // the rest parsed: devices, thread names, session
  std::vector<uint32_t> device_first_node;        // nodes of dev_stats d: [first[d], first[d + 1])
  std::vector<WireNode> nodes;                    // over all devices, in file order
  std::vector<std::string_view> inputs;
  std::vector<WireAllocatorMemory> memory;
  std::vector<WireAllocationRecord> records;
  ImportStats stats;  // unknown fields kept, as the protobuf path counts them
};

// Scans binary step stats (`bytes` is not text, already inflated); nullopt when the input is
// anything the scan does not take as it is (see above). The result points into `bytes`.
std::optional<WireStepStats> ScanBinaryStepStats(std::string_view bytes);

// A node of a scan, with protobuf's accessor names (the import is written once for both forms).
class WireNodeView {
 public:
  WireNodeView(const WireStepStats& step, std::string_view bytes, const WireNode& node)
      : step_(step), bytes_(bytes), node_(node) {}
  std::string_view node_name() const { return bytes_.substr(node_.name_at, node_.name_size); }
  std::string_view timeline_label() const { return bytes_.substr(node_.label_at, node_.label_size); }
  std::string_view op_type() const { return bytes_.substr(node_.op_type_at, node_.op_type_size); }
  uint32_t thread_id() const { return node_.thread_id; }
  uint64_t correlation_id() const { return node_.correlation_id; }
  bool has_kernel() const { return (node_.fields & kNodeKernel) != 0; }
  bool has_memcpy() const { return (node_.fields & kNodeMemcpy) != 0; }
  bool has_collective() const { return (node_.fields & kNodeCollective) != 0; }
  int input_size() const { return static_cast<int>(node_.input_count); }
  std::span<const std::string_view> input() const { return {step_.inputs.data() + node_.first_input, node_.input_count}; }
  std::span<const WireAllocatorMemory> memory() const {
    return {step_.memory.data() + node_.first_memory, node_.memory_count};
  }
  const WireNode& node() const { return node_; }

 private:
  const WireStepStats& step_;
  std::string_view bytes_;
  const WireNode& node_;
};

}  // namespace stepscope::trace
