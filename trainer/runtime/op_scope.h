// Running an op under its node. Every op of a model runs inside an OpScope naming its Node; when
// the device has an OpListener (the profiler, only with --profile), the scope reports the op's
// start, end, thread and outputs; otherwise it costs one atomic load and a branch.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "trainer/runtime/clock.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/graph.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::runtime {

// What the profiler implements. Called on the thread that runs the op.
class OpListener {
 public:
  virtual ~OpListener() = default;
  virtual void OnOpStart(const Device& device, const Node& node, int64_t start_ns) = 0;
  virtual void OnOpEnd(const Device& device, const Node& node, int64_t start_ns, int64_t end_ns,
                       std::span<const Tensor> outputs) = 0;
};

// Ops do not nest: one scope at a time per thread, so its outputs can live in a per-thread
// vector that keeps its capacity (no allocation per op once warm).
class OpScope {
 public:
  OpScope(const Device& device, const Node& node)
      : device_(device), node_(node), listener_(device.op_listener()) {
    if (listener_ != nullptr) {
      OutputsOfThisThread().clear();
      start_ns_ = NowNanos();
      listener_->OnOpStart(device_, node_, start_ns_);
    }
  }
  ~OpScope() {
    if (listener_ != nullptr) {
      std::vector<Tensor>& outputs = OutputsOfThisThread();
      listener_->OnOpEnd(device_, node_, start_ns_, NowNanos(), outputs);
      outputs.clear();  // drop the references now, not at the next op
    }
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  // Records an output (slot = call order) for the profiler; nothing when not profiling.
  void Output(const Tensor& tensor) {
    if (listener_ != nullptr) OutputsOfThisThread().push_back(tensor);
  }

  const Device& device() const { return device_; }
  const Node& node() const { return node_; }

 private:
  const Device& device_;
  const Node& node_;
  OpListener* listener_;
  int64_t start_ns_ = 0;

  static std::vector<Tensor>& OutputsOfThisThread() {
    thread_local std::vector<Tensor> outputs;
    return outputs;
  }
};

}  // namespace stepscope::runtime
