// The work an op does, whatever the trace's format: floating-point operations (a FLOP is one
// multiply or one add, so a fused multiply-add is 2, as PyTorch and the MFU literature count) and
// bytes moved (its inputs read and outputs written, once each), per slice, with where each
// figure came from. Shapes reach this model only through trace::DetailReader: a StepStats
// trace's tensor outputs and input names (an input's shape is its producer's output in the same
// step, else what the RunMetadata's cost graph and partition graphs say of it; a resource
// variable's handle as the variable), the PyTorch profiler's `Input Dims` / `Input type` / `Concrete Inputs`; figures a
// source counted itself (Kineto's `flops` argument, XLA's HLO op stats) are kept beside ours.
//
// What is costed: executor and framework ops (SliceKind::kOp), never the kernels they launch (a
// consumer that wants device time maps kernels to their op by flows or names). Ops call each
// other in a PyTorch trace (aten::linear -> aten::addmm): the outermost op that has a cost
// counts and the ops nested inside it do not, so a step's FLOPs are counted once. An op whose
// cost is not known (its type has no formula, or its shapes were not recorded) is counted in
// `unknown_ops` by op type with its time, never given zero silently; ops known to do no
// arithmetic (views, reshapes, constants, identities) cost 0 FLOPs and are not unknown.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "profiler/trace/trace.h"

namespace stepscope::analysis {

// Where a figure came from.
enum class CostSource : uint8_t {
  kNone = 0,       // not known
  kTrainerShapes,  // stepscope-train's step stats: input and output shapes of each op
  kTfShapes,       // TensorFlow step stats / partition graphs: the same from TensorFlow's records
  kPyTorchShapes,  // the PyTorch profiler's record_shapes: Input Dims, Input type, Concrete Inputs
  kKinetoFlops,    // the PyTorch profiler's own `flops` argument (with_flops=True)
  kXlaHloStats,    // XSpace: the HLO op's flops and bytes accessed as XLA counted them
};
// "none", "trainer_shapes", "tf_shapes", "pytorch_shapes", "kineto_flops", "xla_hlo_stats".
std::string_view CostSourceName(CostSource source);

// What kind of work: decides what counts as model FLOPs (matmul, convolution, attention and a
// recurrent cell's matrix multiply, forward and backward) and what stays in the per-op table.
enum class CostClass : uint8_t {
  kUnknown = 0,
  kMatmul,         // MatMul, BatchMatMul, aten::mm/addmm/bmm/baddbmm
  kConvolution,    // Conv2D and its two backprops, aten::convolution(_backward)
  kAttention,      // scaled dot-product attention
  kRecurrent,      // LSTMBlockCell and its grad: a gate matmul plus element-wise work
  kNormalization,  // BatchNorm, LayerNorm and their grads
  kElementwise,    // element-wise arithmetic, activations, bias adds, reductions, pooling
  kLoss,           // softmax cross-entropy and its grad
  kOptimizer,      // ApplyGradientDescent, ApplyMomentum, ApplyAdam, ...
  kNoArithmetic,   // views, reshapes, copies, constants, identities: 0 FLOPs
};
std::string_view CostClassName(CostClass cost_class);  // "matmul", "convolution", ...

// The precision of an op's arithmetic, from its inputs' dtype: what a device peak is picked by.
enum class Precision : uint8_t { kUnknown = 0, kFp64, kFp32, kTf32, kBf16, kFp16, kFp8, kInt8 };
std::string_view PrecisionName(Precision precision);  // "unknown", "fp64", "fp32", ...
// From a dtype as a source names it: "DT_FLOAT", "float", "c10::BFloat16", "f32", "bf16", ...
Precision PrecisionOfDtype(std::string_view dtype);

// One op's cost. -1: not known.
struct OpCost {
  uint32_t slice = 0;
  int64_t flops = -1;
  int64_t model_flops = 0;     // the matmul/convolution/attention part of `flops` (MFU's numerator)
  int64_t bytes = -1;          // inputs read + outputs written, each once
  int64_t reported_flops = -1; // the source's own count when it has one (Kineto `flops`, HLO)
  CostSource source = CostSource::kNone;        // of `flops` and `bytes`
  CostClass cost_class = CostClass::kUnknown;
  Precision precision = Precision::kUnknown;
  bool operator==(const OpCost&) const = default;
};

// An op type whose ops have no cost: how many, their time, and why.
struct UnknownOpType {
  std::string op_type;
  int64_t count = 0;
  int64_t time_ns = 0;
  std::string reason;  // "no formula for this op type", "shapes not recorded", ...
  bool operator==(const UnknownOpType&) const = default;
};

struct OpCostReport {
  std::vector<OpCost> costs;                // by slice; only the slices counted (see above)
  std::vector<UnknownOpType> unknown_ops;   // longest total time first
  int64_t ops_seen = 0;                     // op slices looked at (not nested in a costed op)
  int64_t ops_costed = 0;                   // of which have a cost (costs.size())
  bool has_shapes = false;                  // any op of the trace carried shapes or flops
  // The cost of a slice; null when it has none (nested in a costed op, unknown, not an op).
  const OpCost* Find(uint32_t slice) const;
};

OpCostReport ComputeOpCosts(const trace::Trace& trace);

// The cost of one slice by its own shapes, whether or not an op around it is costed (a details
// pane; a check of one op against another tool's count). A StepStats op's inputs are found by
// name among the trace's outputs: a pass over the trace per call.
OpCost CostOfSlice(const trace::Trace& trace, uint32_t slice);

// One tensor as a cost formula sees it.
struct TensorShape {
  std::vector<int64_t> dims;  // empty: a scalar
  std::string dtype;          // as the source names it; empty when unknown
  bool known = true;          // false: the source recorded nothing of this tensor
  bool operator==(const TensorShape&) const = default;
};

// An op as a cost formula sees it: its type, inputs, outputs and, where the source has them,
// scalar attributes by position (PyTorch's Concrete Inputs: "[2, 2]" for a stride).
struct OpShapes {
  std::string_view op_type;
  std::vector<TensorShape> inputs;
  std::vector<TensorShape> outputs;
  std::vector<std::string> attributes;  // by input position; empty texts when none
};

// The cost of one op from its shapes, for a source (kTrainerShapes, kTfShapes, kPyTorchShapes:
// TensorFlow op types for the first two, aten:: names for the third). `flops` -1 when the op type
// has no formula or its shapes do not fit the formula (cost_class says which when known).
OpCost CostFromShapes(const OpShapes& op, CostSource source);

}  // namespace stepscope::analysis
