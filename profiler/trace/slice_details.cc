#include "profiler/trace/slice_details.h"

#include "profiler/trace/node_store.h"
#include "profiler/trace/tf_names.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

std::optional<MemcpyDetails> MemcpyFromNode(const Trace& trace, uint32_t slice, const tf::NodeExecStats& node) {
  MemcpyDetails details;
  if (node.has_memcpy()) {
    details.kind = node.memcpy().kind();
    details.bytes = node.memcpy().bytes();
    details.src_memory = node.memcpy().src_memory();
    details.dst_memory = node.memcpy().dst_memory();
    return details;
  }
  const TfMemcpyLabel label = ParseTfMemcpyLabel(node.timeline_label());
  if (!label.matched) {
    // Kind from the op type ("MEMCPYHtoD") even when the label gives no byte count.
    std::string_view op = trace.str(trace.slice_op_type(trace.slices()[slice]));
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

// A PyTorch profiler copy: kind and memory kinds from its name, bytes from its args.
std::optional<MemcpyDetails> MemcpyFromArgs(const Trace& trace, uint32_t slice, const TransferArgs& args) {
  CopyName copy = ParseCopyName(trace.str(trace.slice_name(trace.slices()[slice])));
  if (copy.kind.empty()) copy = ParseCopyName(trace.str(trace.slice_op_type(trace.slices()[slice])));
  MemcpyDetails details;
  details.kind = copy.kind.empty() ? "unknown" : copy.kind;
  details.src_memory = copy.src_memory;
  details.dst_memory = copy.dst_memory;
  details.bytes = std::max<int64_t>(args.bytes, 0);
  details.bandwidth_gbps = args.bandwidth_gbps;
  return details;
}

}  // namespace

std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice) {
  if (trace.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  if (const TransferArgs* args = trace.transfer_args(slice)) return MemcpyFromArgs(trace, slice, *args);
  const std::unique_ptr<tf::NodeExecStats> node = trace.node(slice);
  if (node == nullptr) return std::nullopt;
  return MemcpyFromNode(trace, slice, *node);
}

std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice, NodeReader& nodes) {
  if (trace.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  if (const TransferArgs* args = trace.transfer_args(slice)) return MemcpyFromArgs(trace, slice, *args);
  const tf::NodeExecStats* node = nodes.Get(slice);
  if (node == nullptr) return std::nullopt;
  return MemcpyFromNode(trace, slice, *node);
}

std::optional<MemcpyDetails> GetMemcpyDetails(const Trace& trace, uint32_t slice, const tf::NodeExecStats& node) {
  if (trace.slices()[slice].kind != SliceKind::kMemcpy) return std::nullopt;
  if (const TransferArgs* args = trace.transfer_args(slice)) return MemcpyFromArgs(trace, slice, *args);
  return MemcpyFromNode(trace, slice, node);
}

CopyName ParseCopyName(std::string_view name) {
  CopyName copy;
  // ROCm's copy activities (roctracer): CopyHostToDevice, CopyDeviceToHost, CopyDeviceToDevice.
  for (const auto& [rocm, kind] : {std::pair{"CopyHostToDevice", "HtoD"}, std::pair{"CopyDeviceToHost", "DtoH"},
                                   std::pair{"CopyDeviceToDevice", "DtoD"}, std::pair{"CopyHostToHost", "HtoH"}}) {
    if (name.substr(0, std::string_view(rocm).size()) == rocm) {
      copy.kind = kind;
      return copy;
    }
  }
  if (name.substr(0, 6) == "MEMCPY") {
    copy.kind = std::string(name.substr(6));
    return copy;
  }
  if (name.substr(0, 7) == "Memcpy ") {
    name.remove_prefix(7);
    const size_t space = name.find(' ');
    copy.kind = std::string(name.substr(0, space));
    const size_t open = name.find('(');
    const size_t arrow = name.find(" -> ");
    const size_t close = name.rfind(')');
    if (open != std::string_view::npos && arrow != std::string_view::npos && close != std::string_view::npos &&
        open < arrow && arrow < close) {
      copy.src_memory = std::string(name.substr(open + 1, arrow - open - 1));
      copy.dst_memory = std::string(name.substr(arrow + 4, close - arrow - 4));
    }
  }
  return copy;
}

}  // namespace stepscope::trace
