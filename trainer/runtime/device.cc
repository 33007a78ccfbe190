#include "trainer/runtime/device.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <thread>

#include "trainer/runtime/bfc_allocator.h"
#include "trainer/runtime/cpu_sub_allocator.h"
#ifdef STEPSCOPE_WITH_CUDA
#include "kernels/cuda/cuda_context.h"
#endif

namespace stepscope::runtime {
namespace {

std::optional<int> ParseInt(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string DeviceName(DeviceKind kind, int index, const DevicePlacement& placement) {
  return "/job:" + placement.job + "/replica:0/task:" + std::to_string(placement.task) +
         (kind == DeviceKind::kCpu ? "/device:CPU:" : "/device:GPU:") + std::to_string(index);
}

}  // namespace

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
      name_(DeviceName(kind, index, placement)),
      pool_(std::make_unique<kernels::ThreadPool>(std::max(0, num_threads - 1))),
      cpu_(pool_.get()),
      allocator_(std::move(allocator)) {}

Device::~Device() = default;

StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(const DeviceSpec& spec,
                                                             const DeviceOptions& options) {
  if (spec.ids.empty()) return InvalidInput("no devices requested");
  if (spec.kind == DeviceKind::kGpu) {
#ifdef STEPSCOPE_WITH_CUDA
    const StatusOr<int> usable = kernels::CudaDeviceCount();
    if (!usable.ok()) {
      return Unavailable("GPU devices requested (--devices gpu:...) but none is usable: " +
                         usable.status().message());
    }
    const int count = *usable;
    for (int id : spec.ids) {
      if (id >= count) {
        return Unavailable("GPU " + std::to_string(id) + " requested but this machine has " +
                           std::to_string(count) + " usable GPU(s)");
      }
    }
    return Unavailable(
        "GPU devices were found, but this version trains on CPU devices only "
        "(use --devices cpu:N)");
#else
    return Unavailable("GPU devices requested (--devices gpu:...) but this build has no CUDA "
                       "support; rebuild with the CUDA toolkit or use --devices cpu:N");
#endif
  }
  const int hardware = options.total_threads > 0
                           ? options.total_threads
                           : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int per_device = std::max(1, hardware / static_cast<int>(spec.ids.size()));
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
