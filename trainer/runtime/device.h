// Devices of the trainer. A CPU device is a slice of the machine's cores (its own thread pool)
// with its own allocator ("cpu" as TensorFlow names it; one per device so each tower's memory is
// its own); `--devices cpu:N` makes N of them in one process. CUDA devices exist only in GPU
// builds; asking for one where there is no GPU is a clear kUnavailable error.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "trainer/runtime/allocator.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::runtime {

class OpListener;

enum class DeviceKind : uint8_t { kCpu, kGpu };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  std::vector<int> ids;  // cpu:N -> 0..N-1; gpu:0,2 -> {0, 2}
};

// Parses `cpu`, `cpu:N` (1 <= N <= 64) or `gpu:0,1,...`; kInvalidInput naming the bad part.
StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& text);

// Where a device lives in a run: TensorFlow's job/replica/task prefix. A single process is
// `/job:localhost/replica:0/task:0`; rank R of a multi-process run is `/job:worker/replica:0/task:R`.
struct DevicePlacement {
  std::string job = "localhost";
  int task = 0;
};

class Device {
 public:
  Device(DeviceKind kind, int index, const DevicePlacement& placement, int num_threads,
         std::unique_ptr<Allocator> allocator);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceKind kind() const { return kind_; }
  int index() const { return index_; }
  // "/job:localhost/replica:0/task:0/device:CPU:0"
  const std::string& name() const { return name_; }
  Allocator& allocator() const { return *allocator_; }
  const kernels::CpuContext& cpu() const { return cpu_; }
  int num_threads() const { return cpu_.num_threads(); }

  StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) const {
    return Tensor::Allocate(*allocator_, dtype, shape);
  }

  // The profiler's hook: null (the default) costs one relaxed load per op.
  OpListener* op_listener() const { return listener_.load(std::memory_order_acquire); }
  void set_op_listener(OpListener* listener) { listener_.store(listener, std::memory_order_release); }

 private:
  DeviceKind kind_;
  int index_;
  std::string name_;
  std::unique_ptr<kernels::ThreadPool> pool_;
  kernels::CpuContext cpu_;
  std::unique_ptr<Allocator> allocator_;
  std::atomic<OpListener*> listener_{nullptr};
};

struct DeviceOptions {
  DevicePlacement placement;
  int64_t memory_limit_bytes = int64_t{16} << 30;  // per device allocator
  int total_threads = 0;                           // 0: the machine's hardware threads
};

// Creates the devices of `spec`. GPU devices: kUnavailable when this build has no CUDA or the
// machine has no usable GPU (the message says which).
StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceSpec& spec,
                                                             const DeviceOptions& options = {});

}  // namespace stepscope::runtime
