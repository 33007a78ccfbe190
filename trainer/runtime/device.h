// Devices of the trainer. A CPU device is a slice of the machine's cores (its own thread pool)
// with its own allocator ("cpu" as TensorFlow names it; one per device so each tower's memory is
// its own); `--devices cpu:N` makes N of them in one process.
//
// A GPU device (GPU builds only, trainer/runtime/cuda/) holds what TensorFlow's StreamExecutor
// GPU device holds: the GPU's primary CUDA context, a compute stream and two copy streams
// (host-to-device, device-to-host), a BFC allocator "GPU_<k>_bfc" over cudaMalloc and a pinned
// host allocator "cuda_host_bfc" over cudaHostAlloc. Asking for one where there is no GPU or no
// driver is a clear kUnavailable error naming the GPU and the CUDA error. An op on a GPU device
// enqueues its CUDA kernels on the compute stream (ops.h); data moves between host and device
// through transfers.h, the same calls on either kind of device.
//
// Names are TensorFlow's: `/job:<job>/replica:0/task:<task>/device:<CPU|GPU>:<k>`, with
// job/task from DevicePlacement (`localhost`/0 for one process, `worker`/R for rank R of an MPI
// run).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/cpu_context.h"
#include "trainer/runtime/allocator.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::kernels {
class CudaContext;  // kernels/cuda/cuda_context.h (GPU builds)
}  // namespace stepscope::kernels

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

  // The placement of `rank` in a run of `world_size` processes: localhost/0 for a single
  // process, worker/rank otherwise (TF's convention for multi-worker runs).
  static DevicePlacement ForRank(int rank, int world_size);

  bool operator==(const DevicePlacement&) const = default;
};

// kInvalidInput unless the job is a TF job name ([A-Za-z][A-Za-z0-9_]*) and the task is >= 0.
Status ValidatePlacement(const DevicePlacement& placement);

// "/job:localhost/replica:0/task:0/device:CPU:0" (no validation: see ValidatePlacement).
std::string FullDeviceName(DeviceKind kind, int index, const DevicePlacement& placement);

// True when this build can drive CUDA GPUs (STEPSCOPE_CUDA on and the toolkit found).
bool GpuSupportCompiledIn();

// What a GPU is, as CUDA describes it (read once when its device is made): each profiled step
// records it (TraceSession.devices), so that analyses pick the GPU's peak from the trace. Zero
// and empty mean "not known" (a stand-in GPU that gives none); memory is the whole GPU's, also
// for a virtual GPU holding a share of it.
struct GpuProperties {
  std::string name;          // "NVIDIA H200"
  int32_t sm_count = 0;      // multiprocessors
  int64_t memory_bytes = 0;  // total global memory
  int64_t clock_khz = 0;     // the SM clock
  int32_t compute_major = 0, compute_minor = 0;
  bool operator==(const GpuProperties&) const = default;
};

// What a GPU device holds beyond a CPU device's parts: its CUDA context, its streams and the
// kernels' context on the compute stream (cuda::GpuStreams, trainer/runtime/cuda/). Opaque here
// so that code using devices, and CPU-only builds, need no CUDA header. Device pointers below come
// from the device's allocator; host pointers are ordinary (pageable or pinned) host memory.
class GpuResources {
 public:
  virtual ~GpuResources() = default;
  virtual int ordinal() const = 0;  // the CUDA device number
  // The compute stream and its cuBLAS handle, where every op's kernels are enqueued. Null only
  // for a stand-in whose "device memory" is host memory (tests of the data movement without a
  // GPU): ops then run their CPU kernels on it.
  virtual const kernels::CudaContext* kernel_context() const = 0;
  // Makes this GPU current on the calling thread (each tower thread drives its own GPU).
  virtual Status MakeCurrent() const = 0;
  // Copies on the copy streams, ordered after the work already on the compute stream and before
  // any enqueued later; both return once the copy is done, so `host` may be reused at once.
  virtual Status CopyHostToDevice(const void* host, void* device, int64_t bytes) const = 0;
  virtual Status CopyDeviceToHost(const void* device, void* host, int64_t bytes) const = 0;
  // `rows` rows of `row_bytes` from `src` to `dst` (pitches in bytes), on the compute stream.
  virtual Status CopyRowsOnDevice(void* dst, int64_t dst_pitch, const void* src, int64_t src_pitch,
                                  int64_t row_bytes, int64_t rows) const = 0;
  // Sets `bytes` bytes to `value` on the compute stream.
  virtual Status MemsetOnDevice(void* device, int value, int64_t bytes) const = 0;
  // Waits for every stream of the device; reports asynchronous errors.
  virtual Status Synchronize() const = 0;
  // The device's CUDA streams (cudaStream_t, opaque here), so the profiler can tell its work
  // from another device's on the same GPU (virtual GPUs); none for a stand-in without CUDA.
  virtual std::vector<void*> streams() const { return {}; }
  // The GPU's model, SMs, clock and memory; empty for a stand-in that gives none.
  virtual const GpuProperties& properties() const {
    static const GpuProperties none;
    return none;
  }
};

// What a device was asked to do, counted alike on every kind of device (the runtime's calls, not
// a profiler's records), so a CPU run says how many GPU operations a step would make. On a GPU
// each is work the host enqueues or waits for: per-op launch cost is what bounds small steps.
struct DeviceOpCounts {
  // Op kernels run (RunKernel). On a GPU each enqueues its CUDA kernels: one, but for the few
  // that run several (LSTMBlockCell: two gate GEMMs and its element-wise kernel; GlobalNorm: one
  // per tensor and one to finish).
  int64_t kernel_calls = 0;
  int64_t device_copies = 0;  // copies within the device's memory (CopyRowsWithin)
  int64_t memsets = 0;        // ZeroFill
  int64_t host_reads = 0;     // reads into host memory; the host waits for the device (CopyToHost)
  int64_t host_writes = 0;    // copies from host memory (CopyFromHost)

  int64_t total() const {
    return kernel_calls + device_copies + memsets + host_reads + host_writes;
  }
  bool operator==(const DeviceOpCounts&) const = default;
  // The counts between two snapshots (`*this` the later).
  DeviceOpCounts operator-(const DeviceOpCounts& earlier) const {
    return {kernel_calls - earlier.kernel_calls, device_copies - earlier.device_copies,
            memsets - earlier.memsets, host_reads - earlier.host_reads,
            host_writes - earlier.host_writes};
  }
};

enum class DeviceOp : uint8_t { kKernelCall, kDeviceCopy, kMemset, kHostRead, kHostWrite };

class Device {
 public:
  // A CPU device with `num_threads` threads (this one included) and its allocator.
  Device(DeviceKind kind, int index, const DevicePlacement& placement, int num_threads,
         std::unique_ptr<Allocator> allocator);
  // A GPU device: `allocator` hands out device memory ("GPU_<k>_bfc"), `host_allocator` pinned
  // host memory ("cuda_host_bfc"); host-side work runs on one thread.
  Device(int index, const DevicePlacement& placement, std::unique_ptr<GpuResources> gpu,
         std::unique_ptr<Allocator> allocator, std::unique_ptr<Allocator> host_allocator);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceKind kind() const { return kind_; }
  int index() const { return index_; }
  // "/job:localhost/replica:0/task:0/device:CPU:0"
  const std::string& name() const { return name_; }
  // Where this device's tensors live: host memory on a CPU device, device memory on a GPU.
  Allocator& allocator() const { return *allocator_; }
  // Pinned host memory for copies to and from a GPU; null on a CPU device.
  Allocator* host_allocator() const { return host_allocator_.get(); }
  // The CUDA context and streams of a GPU device; null on a CPU device.
  const GpuResources* gpu() const { return gpu_.get(); }
  const kernels::CpuContext& cpu() const { return cpu_; }
  int num_threads() const { return cpu_.num_threads(); }

  StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) const {
    return Tensor::Allocate(*allocator_, dtype, shape);
  }

  // Counts one operation (RunKernel and transfers.h call it); relaxed: read between steps.
  void CountOp(DeviceOp op) const {
    op_counts_[static_cast<size_t>(op)].fetch_add(1, std::memory_order_relaxed);
  }
  // Everything counted since the device was made; subtract two snapshots for a step's.
  DeviceOpCounts op_counts() const {
    const auto get = [&](DeviceOp op) {
      return op_counts_[static_cast<size_t>(op)].load(std::memory_order_relaxed);
    };
    return {get(DeviceOp::kKernelCall), get(DeviceOp::kDeviceCopy), get(DeviceOp::kMemset),
            get(DeviceOp::kHostRead), get(DeviceOp::kHostWrite)};
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
  // Declared before the allocators so that their regions go back to the GPU while its context
  // and streams still exist.
  std::unique_ptr<GpuResources> gpu_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<Allocator> host_allocator_;
  std::atomic<OpListener*> listener_{nullptr};
  mutable std::array<std::atomic<int64_t>, 5> op_counts_{};  // by DeviceOp
};

struct DeviceOptions {
  DevicePlacement placement;  // job and task in the device names
  // This process's place among the processes of its host (an MPI launch): which of the host's
  // GPUs its `gpu:` ids stand for (GpuOrdinalsOfRank).
  int local_rank = 0;
  int local_size = 1;
  // Per device allocator; a GPU's is also capped by the memory free on it at creation.
  int64_t memory_limit_bytes = int64_t{16} << 30;
  // Per GPU device's pinned host allocator (TF's default TF_GPU_HOST_MEM_LIMIT_IN_MB, 64 GiB).
  int64_t pinned_memory_limit_bytes = int64_t{64} << 30;
  // CPU devices: the threads all devices share (split evenly); 0 = the machine's hardware
  // threads.
  int total_threads = 0;
  // GPU devices: TensorFlow's logical (virtual) GPUs, this many devices on each GPU of the spec
  // (PlanVirtualGpus).
  int virtual_gpus_per_gpu = 1;
};

// One GPU device to create: its TF id (k of /device:GPU:k), the CUDA device it runs on and its
// allocator's limit.
struct VirtualGpu {
  int tf_id = 0;
  int ordinal = 0;
  int64_t memory_limit_bytes = 0;
  bool operator==(const VirtualGpu&) const = default;
};

// The GPU devices of `ids` (the `gpu:` ids, standing for CUDA devices `ordinals`, which have
// `free_bytes` free), `per_gpu` of them on each GPU, as TensorFlow's virtual devices are: each is
// a device of its own (its streams, its "GPU_k_bfc" allocator) and they are numbered in order,
// GPU p of the list giving /device:GPU:p·V .. p·V+V-1. With one per GPU the ids stay the names
// (gpu:0,2 gives GPU:0 and GPU:2). Each one's memory limit is min(`memory_limit_bytes`, its
// GPU's free memory / `per_gpu`): the GPU's memory is shared out, none given twice.
// kInvalidInput when per_gpu < 1 or the spans differ in length.
StatusOr<std::vector<VirtualGpu>> PlanVirtualGpus(std::span<const int> ids,
                                                  std::span<const int> ordinals,
                                                  std::span<const int64_t> free_bytes,
                                                  int per_gpu, int64_t memory_limit_bytes);

// The CUDA device numbers a process's `--devices gpu:i,j,...` ids stand for, on a host with
// `visible_gpus` GPUs where the launcher placed `local_size` processes (this one is `local_rank`).
// The ids stay the devices' names (TensorFlow's device ids: /device:GPU:0 on every rank, as with
// Horovod's one GPU per rank); the numbers are what CUDA and NCCL are given.
// - One process on the host: the ids themselves.
// - Several: each rank takes its own block of S = (highest id + 1) GPUs, rank r the GPUs
//   r·S + id, when the host has room for every rank's block (so `mpirun -np 8 ... --devices
//   gpu:0` puts the 8 ranks on 8 GPUs).
// - Otherwise, when the launcher has already given each rank its own GPUs through
//   CUDA_VISIBLE_DEVICES (`launcher_pinned`, e.g. srun --gpus-per-task) and the rank sees at
//   least S of them: the ids themselves, within what the rank sees.
// kUnavailable naming the rank, its block and the host's GPUs when neither fits.
StatusOr<std::vector<int>> GpuOrdinalsOfRank(std::span<const int> ids, int local_rank,
                                             int local_size, int visible_gpus,
                                             bool launcher_pinned);

// The CPU threads one process may use when an MPI launcher placed `local_ranks` processes on a
// host with `hardware_threads`: an even share, at least one.
int ProcessThreadBudget(int hardware_threads, int local_ranks);

// Creates the devices of `spec`, named with `options.placement` (kInvalidInput when it is not
// valid). GPU devices: kUnavailable when this build has no CUDA, or the driver or a requested GPU
// is missing (the message names the GPU and carries the CUDA error); no device is created then.
// CPU devices also set OpenBLAS's threads per GEMM for the whole process (kernels/blas_threads.h):
// a single device's threads, one with several devices, unless the environment chose a count.
StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceSpec& spec,
                                                             const DeviceOptions& options = {});

}  // namespace stepscope::runtime
