#include "profiler/trace/slice_details.h"

#include "profiler/trace/tf_names.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {

std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice) {
  if (trace.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  const tf::NodeExecStats* node = trace.node(slice);
  if (node == nullptr) return std::nullopt;
  MemcpyDetails details;
  if (node->has_memcpy()) {
    details.kind = node->memcpy().kind();
    details.bytes = node->memcpy().bytes();
    details.src_memory = node->memcpy().src_memory();
    details.dst_memory = node->memcpy().dst_memory();
    return details;
  }
  const TfMemcpyLabel label = ParseTfMemcpyLabel(node->timeline_label());
  if (!label.matched) {
    // Kind from the op type ("MEMCPYHtoD") even when the label gives no byte count.
    std::string_view op = trace.str(trace.slices()[slice].op_type);
    if (op.substr(0, 6) != "MEMCPY") return std::nullopt;
    details.kind = std::string(op.substr(6));
    return details;
  }
  details.kind = std::string(label.kind);
  details.bytes = label.bytes;
  details.src_memory = std::string(label.src_memory);
  details.dst_memory = std::string(label.dst_memory);
  return details;
}

}  // namespace stepscope::trace
