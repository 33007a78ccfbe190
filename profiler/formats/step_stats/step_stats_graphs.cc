// The tensors a RunMetadata's graphs describe (DetailReader::GraphTensors): the cost graph's
// output_info and the partition graphs' `_output_shapes`, by producer and slot, so an op's cost
// can use the shapes of tensors the step stats leave without one. A resource variable's handle
// (a VarHandleOp's output, a DT_RESOURCE scalar in the step stats) stands for the variable, whose
// dtype and shape are the op's attributes: the optimizer ops that take handles read the variable.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "profiler/formats/step_stats/step_stats_payload.h"
#include "stepscope/tf/run_metadata.pb.h"

namespace stepscope::trace {
namespace {

// A reference type (DT_FLOAT_REF = 101) as its value type: the tensor's elements are the same.
std::string DtypeName(int dtype) {
  if (dtype > 100) dtype -= 100;
  if (dtype == tf::DT_INVALID || !tf::DataType_IsValid(dtype)) return "";
  return tf::DataType_Name(static_cast<tf::DataType>(dtype));
}

void SetShape(const tf::TensorShapeProto& shape, GraphTensor& t) {
  t.unknown_rank = shape.unknown_rank();
  t.shape.clear();
  for (const auto& dim : shape.dim()) t.shape.push_back(dim.size());
}

using Tensors = std::map<std::pair<std::string, int32_t>, GraphTensor>;

// Adds what `graph` says of tensors not described yet.
void AddPartitionGraph(const tf::GraphDef& graph, Tensors& tensors) {
  for (const tf::NodeDef& node : graph.node()) {
    const auto shapes = node.attr().find("_output_shapes");
    if (node.op() == "VarHandleOp") {
      const auto shape = node.attr().find("shape");
      const auto dtype = node.attr().find("dtype");
      if (shape == node.attr().end() || dtype == node.attr().end()) continue;
      GraphTensor& t = tensors[{node.name(), 0}];  // the handle: replaces a cost graph's scalar
      t.producer = node.name(), t.slot = 0, t.variable = true;
      t.dtype = DtypeName(dtype->second.type());
      SetShape(shape->second.shape(), t);
      continue;
    }
    if (shapes == node.attr().end() || !shapes->second.has_list()) continue;
    const auto& list = shapes->second.list().shape();
    // The element type of a single output: a Const's or a variable's `dtype`, else the op's `T`.
    std::string dtype;
    if (list.size() == 1) {
      for (const char* key : {"dtype", "T"}) {
        const auto it = node.attr().find(key);
        if (it != node.attr().end() && it->second.value_case() == tf::AttrValue::kType) {
          dtype = DtypeName(it->second.type());
          break;
        }
      }
    }
    for (int slot = 0; slot < list.size(); ++slot) {
      const auto [it, added] = tensors.try_emplace({node.name(), slot});
      if (!added) continue;
      GraphTensor& t = it->second;
      t.producer = node.name(), t.slot = slot, t.dtype = dtype;
      SetShape(list[slot], t);
    }
  }
}

}  // namespace

std::vector<GraphTensor> GraphTensorsOf(const tf::RunMetadata& metadata) {
  Tensors tensors;
  for (const auto& node : metadata.cost_graph().node()) {
    for (int slot = 0; slot < node.output_info_size(); ++slot) {
      const auto& info = node.output_info(slot);
      if (!info.has_shape() && info.dtype() == tf::DT_INVALID) continue;
      GraphTensor& t = tensors[{node.name(), slot}];
      t.producer = node.name(), t.slot = slot, t.dtype = DtypeName(info.dtype());
      SetShape(info.shape(), t);
    }
  }
  for (const tf::GraphDef& graph : metadata.partition_graphs()) AddPartitionGraph(graph, tensors);
  for (const auto& function : metadata.function_graphs()) {
    for (const tf::GraphDef& graph : function.partition_graphs()) AddPartitionGraph(graph, tensors);
  }
  std::vector<GraphTensor> out;
  out.reserve(tensors.size());
  for (auto& [key, t] : tensors) out.push_back(std::move(t));
  return out;
}

}  // namespace stepscope::trace
