// Running an op under its node. Every op of a model runs inside an OpScope naming its Node; when
// the device has an OpListener (the profiler, only with --profile), the scope reports the op's
// start, end, thread and outputs; otherwise it costs one atomic load and a branch. Copies the
// runtime makes between memories (input staging, cross-device gathers, fusion-buffer packing)
// are reported the same way through a CopyScope, as TensorFlow's MEMCPY records.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>
#include <vector>

#include "trainer/runtime/clock.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/graph.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::runtime {

// TensorFlow's copy kinds (the `MEMCPY<kind>` of its records) that CPU devices make: from host
// memory into a device's, and between two devices' memories.
enum class CopyKind : uint8_t { kHostToDevice, kDeviceToDevice };

inline std::string_view CopyKindName(CopyKind kind) {
  return kind == CopyKind::kHostToDevice ? "HtoD" : "DtoD";
}
// The source memory of TF's label "(Pageable to Device)": a copy from the host into a GPU is
// staged through pinned memory (transfers.h); into a CPU device's memory it reads pageable
// memory.
inline std::string_view CopySourceMemory(CopyKind kind, DeviceKind destination) {
  if (kind != CopyKind::kHostToDevice) return "Device";
  return destination == DeviceKind::kGpu ? "Pinned" : "Pageable";
}

// One copy onto `device` (the destination). `annotation` names what made it, as TF's memcpy
// node names do (`<op>:<OpType>` or an edge name); it only has to live until the call returns.
struct CopyEvent {
  std::string_view annotation;
  CopyKind kind = CopyKind::kDeviceToDevice;
  int64_t bytes = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// What the profiler implements. Called on the thread that runs the op or the copy.
class OpListener {
 public:
  virtual ~OpListener() = default;
  virtual void OnOpStart(const Device& device, const Node& node, int64_t start_ns) = 0;
  virtual void OnOpEnd(const Device& device, const Node& node, int64_t start_ns, int64_t end_ns,
                       std::span<const Tensor> outputs) = 0;
  // The op's input tensors, in the order of its node's inputs, just before OnOpEnd. Listeners
  // that do not record shapes ignore them.
  virtual void OnOpInputs(const Device& /*device*/, const Node& /*node*/, std::span<const Tensor> /*inputs*/) {}
  // A copy into `device`'s memory ended. Listeners that do not record copies ignore it.
  virtual void OnCopy(const Device& /*device*/, const CopyEvent& /*copy*/) {}
};

// Ops do not nest: one scope at a time per thread, so its outputs can live in a per-thread
// vector that keeps its capacity (no allocation per op once warm).
class OpScope {
 public:
  OpScope(const Device& device, const Node& node)
      : device_(device), node_(node), listener_(device.op_listener()) {
    if (listener_ != nullptr) {
      OutputsOfThisThread().clear();
      InputsOfThisThread().clear();
      start_ns_ = NowNanos();
      listener_->OnOpStart(device_, node_, start_ns_);
    }
  }
  ~OpScope() {
    if (listener_ != nullptr) {
      std::vector<Tensor>& inputs = InputsOfThisThread();
      if (!inputs.empty()) listener_->OnOpInputs(device_, node_, inputs);
      inputs.clear();
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

  // Records the op's inputs' shapes for the profiler (in the node's input order), so that its
  // cost can be counted; nothing when not profiling.
  void Inputs(std::initializer_list<const Tensor*> tensors) {
    if (listener_ == nullptr) return;
    for (const Tensor* t : tensors) InputsOfThisThread().push_back(t != nullptr ? *t : Tensor());
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
  static std::vector<Tensor>& InputsOfThisThread() {
    thread_local std::vector<Tensor> inputs;
    return inputs;
  }
};

// Times one copy into `device` and reports it at scope end (nothing when not profiling):
//   { CopyScope copy(device, "tower_0/TrainInput/split:Slice", CopyKind::kHostToDevice, bytes);
//     std::memcpy(dst, src, bytes); }
// May nest inside an OpScope (the copy an op makes) or stand alone.
class CopyScope {
 public:
  CopyScope(const Device& device, std::string_view annotation, CopyKind kind, int64_t bytes)
      : device_(device), listener_(device.op_listener()) {
    if (listener_ != nullptr) {
      event_.annotation = annotation;
      event_.kind = kind;
      event_.bytes = bytes;
      event_.start_ns = NowNanos();
    }
  }
  ~CopyScope() {
    if (listener_ != nullptr) {
      event_.end_ns = NowNanos();
      listener_->OnCopy(device_, event_);
    }
  }
  CopyScope(const CopyScope&) = delete;
  CopyScope& operator=(const CopyScope&) = delete;

 private:
  const Device& device_;
  OpListener* listener_;
  CopyEvent event_;
};

}  // namespace stepscope::runtime
