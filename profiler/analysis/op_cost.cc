// Costs every op of a trace (op_cost.h): shapes through DetailReader, one formula per op type
// (op_cost_formulas.cc), the outermost costed op of a call counted, unknown ops listed by type.
#include "profiler/analysis/op_cost.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <vector>

#include "profiler/trace/slice_details.h"

namespace stepscope::analysis {
namespace {

using trace::DetailReader;
using trace::Slice;
using trace::SliceKind;

// Output shapes by producer name, slot-indexed: a StepStats op names its inputs ("conv/Conv2D",
// "split:1"), whose shapes are their producers' outputs.
using ProducedShapes = std::unordered_map<std::string, std::vector<TensorShape>>;

TensorShape ShapeOf(const trace::TensorOutput& out) {
  TensorShape t;
  t.dims.assign(out.shape.begin(), out.shape.end());
  t.dtype = std::string(out.dtype);
  t.known = !out.unknown_rank;
  return t;
}

// A step stats output with a real element type (not a resource handle or a variant).
bool DtypeKnown(std::string_view dtype) { return !dtype.empty() && dtype != "DT_RESOURCE" && dtype != "DT_VARIANT"; }

ProducedShapes CollectProducedShapes(const trace::Trace& trace, DetailReader& reader) {
  ProducedShapes produced;
  const std::span<const Slice> slices = trace.slices();
  for (uint32_t i = 0; i < slices.size(); ++i) {
    if (slices[i].kind != SliceKind::kOp || slices[i].duplicate()) continue;
    const std::span<const trace::TensorOutput> outputs = reader.Outputs(i);
    if (outputs.empty()) continue;
    std::vector<TensorShape>& shapes = produced[std::string(outputs.front().producer)];
    if (!shapes.empty()) continue;  // the same node in another step: the same shapes
    for (const trace::TensorOutput& out : outputs) {
      if (out.slot < 0) continue;
      if (shapes.size() <= static_cast<size_t>(out.slot)) shapes.resize(out.slot + 1, TensorShape{{}, "", false});
      shapes[out.slot] = ShapeOf(out);
    }
  }
  // The run's graphs fill in what the step stats left out: tensors no record gave a shape, and
  // resource handles, which stand for their variables (what ResourceApply* ops read and write).
  for (trace::GraphTensor& t : reader.GraphTensors()) {
    std::vector<TensorShape>& shapes = produced[t.producer];
    if (shapes.size() <= static_cast<size_t>(t.slot)) shapes.resize(t.slot + 1, TensorShape{{}, "", false});
    TensorShape& shape = shapes[t.slot];
    if (shape.known && !t.variable && DtypeKnown(shape.dtype)) continue;
    shape = TensorShape{std::move(t.shape), std::move(t.dtype), !t.unknown_rank};
  }
  return produced;
}

// "node:2" -> ("node", 2); "^ctrl" is a control input (no tensor).
const TensorShape* ProducedInput(const ProducedShapes& produced, std::string_view input) {
  size_t slot = 0;
  const size_t colon = input.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < input.size() &&
      std::all_of(input.begin() + colon + 1, input.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    slot = std::stoul(std::string(input.substr(colon + 1)));
    input = input.substr(0, colon);
  }
  const auto it = produced.find(std::string(input));
  if (it == produced.end() || slot >= it->second.size()) return nullptr;
  return &it->second[slot];
}

struct Pass {
  const trace::Trace& trace;
  DetailReader reader;
  CostSource shapes_source;
  ProducedShapes produced;
  bool any_shapes = false;
  std::unordered_map<std::string, UnknownOpType> unknown;  // by op type
};

// The shapes of one op as its source recorded them; false when it recorded none.
bool ShapesOf(Pass& pass, uint32_t slice, OpShapes& op) {
  op.inputs.clear(), op.outputs.clear(), op.attributes.clear();
  const std::span<const trace::TensorInput> inputs = pass.reader.InputShapes(slice);
  for (const trace::TensorInput& in : inputs) {
    // A PyTorch argument: a tensor when its type is an element type or it has dimensions.
    TensorShape t;
    t.dims.assign(in.shape.begin(), in.shape.end());
    t.dtype = std::string(in.dtype);
    t.known = !in.dtype.empty() && in.dtype != "Scalar" && in.dtype != "ScalarList" && in.dtype != "TensorList" &&
              in.dtype != "GenericList";
    op.inputs.push_back(std::move(t));
    op.attributes.emplace_back(in.value);
  }
  for (const trace::TensorOutput& out : pass.reader.Outputs(slice)) op.outputs.push_back(ShapeOf(out));
  bool producers_known = false;  // an input's shape came from its producer (or the graphs)
  if (inputs.empty()) {
    for (std::string_view name : pass.reader.Inputs(slice)) {
      if (name.starts_with("^")) continue;  // a control edge
      const TensorShape* shape = ProducedInput(pass.produced, name);
      producers_known = producers_known || (shape != nullptr && shape->known);
      op.inputs.push_back(shape != nullptr ? *shape : TensorShape{{}, "", false});
    }
  }
  // An op without outputs (an optimizer's in-place update) is costed by its inputs alone.
  return !inputs.empty() || !op.outputs.empty() || producers_known;
}

// A slice's numeric argument `key`; -1 when it has none.
int64_t NumberArg(const trace::Trace& trace, uint32_t slice, std::string_view key) {
  for (const trace::SliceArg& arg : trace.slice_args(slice)) {
    if (arg.is_number && trace.str(arg.key) == key) return arg.number;
  }
  return -1;
}

// An XLA op on a GPU's "XLA Ops" line: read as an annotation (the stream kernels are the work),
// but its stats carry the HLO op's cost as XLA counted it, so it is costed like an op.
bool XlaCostedDeviceOp(const trace::Trace& trace, uint32_t slice) {
  const Slice& s = trace.slices()[slice];
  return trace.source_format() == trace::SourceFormat::kXSpace && s.kind == SliceKind::kAnnotation &&
         trace.tracks()[s.track].kind == trace::TrackKind::kOther && NumberArg(trace, slice, "flops") >= 0;
}

// The cost of one op slice; flops -1 (and cost_class) when unknown, with `why` said.
OpCost CostOf(Pass& pass, uint32_t slice, std::string_view op_type, std::string* why) {
  OpShapes op;
  op.op_type = op_type;
  const bool has_shapes = ShapesOf(pass, slice, op);
  const int64_t reported = pass.reader.ReportedFlops(slice);
  pass.any_shapes = pass.any_shapes || has_shapes || reported >= 0;
  // A JSON trace's ops are PyTorch's (aten::) or, exported by stepscope from step stats,
  // TensorFlow's, costed by TensorFlow's formulas (the trainer's own where it recorded them).
  CostSource source = pass.shapes_source;
  if (source == CostSource::kPyTorchShapes && !op_type.starts_with("aten::")) {
    source = pass.trace.step_info().producer.starts_with("stepscope-train") ? CostSource::kTrainerShapes
                                                                           : CostSource::kTfShapes;
  }
  OpCost cost = has_shapes ? CostFromShapes(op, source) : OpCost{};
  if (cost.flops < 0 && !has_shapes) {
    // An op with nothing recorded (record_shapes off, a NoOp): views, allocations and control
    // ops still do no arithmetic; the others are unknown.
    const OpCost known = CostFromShapes(op, source);
    if (known.cost_class == CostClass::kNoArithmetic) cost = known, cost.bytes = -1;
  }
  cost.slice = slice;
  cost.reported_flops = reported;
  if (cost.flops < 0 && reported >= 0) {
    cost.flops = reported;
    cost.source = CostSource::kKinetoFlops;
    if (pass.trace.source_format() == trace::SourceFormat::kXSpace) {
      // XLA's own count (HloCostAnalysis): its bytes accessed, and its model FLOPs where recorded.
      cost.source = CostSource::kXlaHloStats;
      cost.bytes = NumberArg(pass.trace, slice, "bytes_accessed");
      cost.model_flops = std::max<int64_t>(NumberArg(pass.trace, slice, "model_flops"), 0);
    }
  }
  if (cost.flops < 0) {
    *why = cost.cost_class != CostClass::kUnknown ? "shapes not recorded or not usable"
           : has_shapes                            ? "no formula for this op type"
                                                   : "shapes not recorded";
  }
  return cost;
}

CostSource ShapesSource(const trace::Trace& trace) {
  if (trace.source_format() == trace::SourceFormat::kChromeJson) return CostSource::kPyTorchShapes;
  if (trace.step_info().producer.starts_with("stepscope-train")) return CostSource::kTrainerShapes;
  return CostSource::kTfShapes;
}

// One track's ops in order, with the calls open around the current one.
struct Open {
  uint32_t slice;
  int64_t end_ns;
  bool costed;           // it or an op around it has a cost: the ops inside it are not counted
  bool inner_costed;     // an op inside it has a cost
  bool counted;          // looked at (an op not inside a costed op)
};

}  // namespace

OpCost CostOfSlice(const trace::Trace& trace, uint32_t slice) {
  Pass pass{trace,
            DetailReader(trace, trace::kDetailOutputs | trace::kDetailShapes | trace::kDetailInputs |
                                    trace::kDetailInputShapes),
            ShapesSource(trace),
            {}};
  if (trace.source_format() != trace::SourceFormat::kChromeJson) pass.produced = CollectProducedShapes(trace, pass.reader);
  std::string why;
  return CostOf(pass, slice, trace.str(trace.slice_op_type(trace.slices()[slice])), &why);
}

const OpCost* OpCostReport::Find(uint32_t slice) const {
  const auto it = std::lower_bound(costs.begin(), costs.end(), slice,
                                   [](const OpCost& c, uint32_t s) { return c.slice < s; });
  return it != costs.end() && it->slice == slice ? &*it : nullptr;
}

OpCostReport ComputeOpCosts(const trace::Trace& trace) {
  OpCostReport report;
  Pass pass{trace,
            DetailReader(trace, trace::kDetailOutputs | trace::kDetailShapes | trace::kDetailInputs |
                                    trace::kDetailInputShapes),
            ShapesSource(trace),
            {}};
  if (trace.source_format() != trace::SourceFormat::kChromeJson) pass.produced = CollectProducedShapes(trace, pass.reader);
  const std::span<const Slice> slices = trace.slices();
  struct Pending {  // an uncosted op waiting to learn whether an op inside it has a cost
    uint32_t slice;
    std::string why;
  };
  std::vector<Pending> pending;  // indexed like `open`
  for (uint32_t track = 0; track < trace.tracks().size(); ++track) {
    const uint32_t first = trace.track_first_slice(track);
    const size_t count = trace.track_slices(track).size();
    std::vector<Open> open;
    pending.clear();
    auto close = [&]() {
      const Open top = open.back();
      const Pending waiting = std::move(pending.back());
      open.pop_back();
      pending.pop_back();
      if (!open.empty() && (top.costed || top.inner_costed)) open.back().inner_costed = true;
      if (!top.counted || top.costed || top.inner_costed) return;
      const Slice& s = slices[top.slice];
      UnknownOpType& row = pass.unknown[std::string(trace.str(trace.slice_op_type(s)))];
      if (row.count == 0) row.op_type = std::string(trace.str(trace.slice_op_type(s))), row.reason = waiting.why;
      ++row.count;
      row.time_ns += s.dur_ns;
    };
    for (uint32_t i = first; i < first + count; ++i) {
      const Slice& s = slices[i];
      // The slices around this one are the open ones above its depth (TraceBuilder's nesting).
      while (open.size() > s.depth) close();
      const bool inside_costed = !open.empty() && open.back().costed;
      const bool is_op = (s.kind == SliceKind::kOp || XlaCostedDeviceOp(trace, i)) && !s.duplicate();
      Open entry{i, s.end_ns(), inside_costed, false, is_op && !inside_costed};
      std::string why;
      if (entry.counted) {
        ++report.ops_seen;
        const std::string_view op_type = trace.str(trace.slice_op_type(s));
        OpCost cost = CostOf(pass, i, op_type, &why);
        if (cost.flops >= 0) {
          entry.costed = true;
          report.costs.push_back(cost);
        }
      }
      open.push_back(entry);
      pending.push_back({i, std::move(why)});
    }
    while (!open.empty()) close();
  }
  std::sort(report.costs.begin(), report.costs.end(), [](const OpCost& a, const OpCost& b) { return a.slice < b.slice; });
  report.ops_costed = static_cast<int64_t>(report.costs.size());
  report.has_shapes = pass.any_shapes;
  for (auto& [type, row] : pass.unknown) report.unknown_ops.push_back(std::move(row));
  std::sort(report.unknown_ops.begin(), report.unknown_ops.end(), [](const UnknownOpType& a, const UnknownOpType& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns : a.op_type < b.op_type;
  });
  return report;
}

}  // namespace stepscope::analysis
