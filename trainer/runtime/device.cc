// Parses --devices, names devices as TensorFlow does (job, replica, task per rank), and creates
// CPU devices with their thread pools and allocators.
#include "trainer/runtime/device.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>

#include "base/check.h"
#include "kernels/blas_threads.h"
#include "trainer/runtime/bfc_allocator.h"
#include "trainer/runtime/cpu_sub_allocator.h"
#ifdef STEPSCOPE_WITH_CUDA
#include "trainer/runtime/cuda/gpu_device.h"
#endif

namespace stepscope::runtime {
namespace {

std::optional<int> ParseInt(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

DevicePlacement DevicePlacement::ForRank(int rank, int world_size) {
  if (world_size <= 1) return DevicePlacement{};
  return DevicePlacement{"worker", rank};
}

Status ValidatePlacement(const DevicePlacement& placement) {
  const std::string& job = placement.job;
  const auto is_alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const bool valid_job =
      !job.empty() && is_alpha(job[0]) && std::all_of(job.begin(), job.end(), [&](char c) {
        return is_alpha(c) || (c >= '0' && c <= '9') || c == '_';
      });
  if (!valid_job) {
    return InvalidInput("device job name '" + job +
                        "' is not a TensorFlow job name (a letter, then letters, digits or _)");
  }
  if (placement.task < 0) {
    return InvalidInput("device task " + std::to_string(placement.task) + " of job '" + job +
                        "' is negative");
  }
  return Status::Ok();
}

std::string FullDeviceName(DeviceKind kind, int index, const DevicePlacement& placement) {
  return "/job:" + placement.job + "/replica:0/task:" + std::to_string(placement.task) +
         (kind == DeviceKind::kCpu ? "/device:CPU:" : "/device:GPU:") + std::to_string(index);
}

bool GpuSupportCompiledIn() {
#ifdef STEPSCOPE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int ProcessThreadBudget(int hardware_threads, int local_ranks) {
  return std::max(1, hardware_threads / std::max(1, local_ranks));
}

StatusOr<std::vector<int>> GpuOrdinalsOfRank(std::span<const int> ids, int local_rank,
                                             int local_size, int visible_gpus,
                                             bool launcher_pinned) {
  if (ids.empty()) return InvalidInput("no GPU ids");
  if (local_size < 1 || local_rank < 0 || local_rank >= local_size) {
    return InvalidInput("local rank " + std::to_string(local_rank) + " of " +
                        std::to_string(local_size) + " is not a rank of the host");
  }
  const int block = *std::max_element(ids.begin(), ids.end()) + 1;
  std::vector<int> ordinals(ids.begin(), ids.end());
  if (local_size == 1) {
    for (int id : ids) {
      if (id >= visible_gpus) {
        return Unavailable("GPU " + std::to_string(id) + " does not exist: this machine has " +
                           std::to_string(visible_gpus) + " usable GPU(s), numbered from 0");
      }
    }
    return ordinals;
  }
  if (static_cast<int64_t>(block) * local_size <= visible_gpus) {
    for (int& ordinal : ordinals) ordinal += local_rank * block;
    return ordinals;
  }
  if (launcher_pinned && block <= visible_gpus) return ordinals;
  const std::string host = std::to_string(local_size) + " ranks on this host take " +
                           std::to_string(block) + " GPU(s) each (GPUs " +
                           std::to_string(local_rank * block) + "-" +
                           std::to_string(local_rank * block + block - 1) + " for local rank " +
                           std::to_string(local_rank) + "), but it has " +
                           std::to_string(visible_gpus) + " usable GPU(s)";
  return Unavailable(host + ": start at most " + std::to_string(visible_gpus / block) +
                     " ranks per host, or give each rank its own GPUs with "
                     "CUDA_VISIBLE_DEVICES");
}

StatusOr<std::vector<VirtualGpu>> PlanVirtualGpus(std::span<const int> ids,
                                                  std::span<const int> ordinals,
                                                  std::span<const int64_t> free_bytes,
                                                  int per_gpu, int64_t memory_limit_bytes) {
  if (per_gpu < 1) {
    return InvalidInput("--virtual_gpus_per_gpu " + std::to_string(per_gpu) + ": must be at least 1");
  }
  if (ids.size() != ordinals.size() || ids.size() != free_bytes.size()) {
    return InvalidInput("virtual GPUs: " + std::to_string(ids.size()) + " GPU ids for " +
                        std::to_string(ordinals.size()) + " CUDA devices");
  }
  std::vector<VirtualGpu> plan;
  for (size_t p = 0; p < ids.size(); ++p) {
    const int64_t share = std::min(memory_limit_bytes, free_bytes[p] / per_gpu);
    for (int v = 0; v < per_gpu; ++v) {
      const int tf_id = per_gpu == 1 ? ids[p] : static_cast<int>(p) * per_gpu + v;
      plan.push_back({tf_id, ordinals[p], share});
    }
  }
  return plan;
}

StatusOr<DeviceSpec> ParseDeviceSpec(const std::string& text) {
  const std::string usage = " (expected cpu, cpu:N or gpu:0,1,...)";
  const size_t colon = text.find(':');
  const std::string_view kind = std::string_view(text).substr(0, colon);
  const std::string_view rest =
      colon == std::string::npos ? std::string_view() : std::string_view(text).substr(colon + 1);
  DeviceSpec spec;
  if (kind == "cpu") {
    spec.kind = DeviceKind::kCpu;
    int count = 1;
    if (colon != std::string::npos) {
      const auto parsed = ParseInt(rest);
      if (!parsed || *parsed < 1 || *parsed > 64) {
        return InvalidInput("--devices " + text + ": '" + std::string(rest) +
                            "' is not a device count from 1 to 64" + usage);
      }
      count = *parsed;
    }
    for (int i = 0; i < count; ++i) spec.ids.push_back(i);
    return spec;
  }
  if (kind == "gpu") {
    spec.kind = DeviceKind::kGpu;
    if (rest.empty()) return InvalidInput("--devices " + text + ": no GPU ids" + usage);
    size_t begin = 0;
    while (begin <= rest.size()) {
      const size_t comma = std::min(rest.find(',', begin), rest.size());
      const std::string_view id_text = rest.substr(begin, comma - begin);
      const auto id = ParseInt(id_text);
      if (!id || *id < 0) {
        return InvalidInput("--devices " + text + ": '" + std::string(id_text) +
                            "' is not a GPU id" + usage);
      }
      if (std::find(spec.ids.begin(), spec.ids.end(), *id) != spec.ids.end()) {
        return InvalidInput("--devices " + text + ": GPU " + std::to_string(*id) + " given twice");
      }
      spec.ids.push_back(*id);
      begin = comma + 1;
    }
    return spec;
  }
  return InvalidInput("--devices " + text + ": unknown device kind '" + std::string(kind) + "'" +
                      usage);
}

Device::Device(DeviceKind kind, int index, const DevicePlacement& placement, int num_threads,
               std::unique_ptr<Allocator> allocator)
    : kind_(kind),
      index_(index),
      name_(FullDeviceName(kind, index, placement)),
      pool_(std::make_unique<kernels::ThreadPool>(std::max(0, num_threads - 1))),
      cpu_(pool_.get()),
      allocator_(std::move(allocator)) {}

Device::Device(int index, const DevicePlacement& placement, std::unique_ptr<GpuResources> gpu,
               std::unique_ptr<Allocator> allocator, std::unique_ptr<Allocator> host_allocator)
    : kind_(DeviceKind::kGpu),
      index_(index),
      name_(FullDeviceName(DeviceKind::kGpu, index, placement)),
      pool_(std::make_unique<kernels::ThreadPool>(0)),
      cpu_(pool_.get()),
      gpu_(std::move(gpu)),
      allocator_(std::move(allocator)),
      host_allocator_(std::move(host_allocator)) {
  STEPSCOPE_CHECK(gpu_ != nullptr && allocator_ != nullptr && host_allocator_ != nullptr);
}

Device::~Device() = default;

StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceSpec& spec,
                                                             const DeviceOptions& options) {
  if (spec.ids.empty()) return InvalidInput("no devices requested");
  RETURN_IF_ERROR(ValidatePlacement(options.placement));
  if (options.virtual_gpus_per_gpu != 1 && spec.kind != DeviceKind::kGpu) {
    return InvalidInput("--virtual_gpus_per_gpu " + std::to_string(options.virtual_gpus_per_gpu) +
                        " splits GPUs (--devices gpu:...); CPU devices are many already: "
                        "--devices cpu:N");
  }
  if (spec.kind == DeviceKind::kGpu) {
#ifdef STEPSCOPE_WITH_CUDA
    return cuda::CreateGpuDevices(spec.ids, options);
#else
    return Unavailable("GPU devices requested (--devices gpu:...) but this build has no CUDA "
                       "support; rebuild with the CUDA toolkit or use --devices cpu:N");
#endif
  }
  const int hardware = options.total_threads > 0
                           ? options.total_threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int num_devices = static_cast<int>(spec.ids.size());
  const int per_device = std::max(1, hardware / num_devices);
  // Several devices call GEMMs concurrently from their own threads: one BLAS thread each.
  kernels::ConfigureBlasThreads(num_devices, per_device);
  std::vector<std::unique_ptr<Device>> devices;
  for (int id : spec.ids) {
    // TensorFlow's CPU allocator is called "cpu"; ours is one BFC arena per device.
    auto allocator = std::make_unique<BFCAllocator>(std::make_unique<CpuSubAllocator>(),
                                                    options.memory_limit_bytes, "cpu");
    devices.push_back(std::make_unique<Device>(DeviceKind::kCpu, id, options.placement,
                                               per_device, std::move(allocator)));
  }
  return devices;
}

}  // namespace stepscope::runtime
