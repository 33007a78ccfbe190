// The fields of a kernel's launch arguments (KernelArgs, kernel_args_table.h) in one list, under
// the PyTorch profiler's names and in its order, so that every writer and view of them (the
// Chrome JSON and Perfetto writers, the viewer's details pane) walks the same fields the same way.
// A field is visited only when it was recorded: grid and block when the launch has a grid,
// integers when not negative, fractions when neither negative nor NaN.
#pragma once

#include <cstdint>
#include <string_view>

#include "profiler/trace/kernel_args_table.h"

namespace stepscope::trace {

enum class KernelArgField : uint8_t {
  kGrid, kBlock, kRegisters, kSharedMemory, kBlocksPerSm, kWarpsPerSm, kOccupancy, kDevice, kStream, kCorrelation,
};

// The PyTorch profiler's name of each field (what its `kernel` events' args are called).
constexpr std::string_view KernelArgKey(KernelArgField field) {
  constexpr std::string_view kKeys[] = {"grid", "block", "registers per thread", "shared memory", "blocks per SM",
                                        "warps per SM", "est. achieved occupancy %", "device", "stream",
                                        "correlation"};
  return kKeys[static_cast<size_t>(field)];
}

// Calls visit.Triple(field, v) for grid and block (v: three values), visit.Integer(field, value)
// and visit.Real(field, value) for the others, in the order of KernelArgField.
template <typename Visitor>
void VisitKernelArgs(const KernelArgs& args, Visitor&& visit) {
  if (args.has_grid()) {
    visit.Triple(KernelArgField::kGrid, args.grid);
    visit.Triple(KernelArgField::kBlock, args.block);
  }
  auto integer = [&](KernelArgField field, int64_t value) {
    if (value >= 0) visit.Integer(field, value);
  };
  auto real = [&](KernelArgField field, float value) {
    if (value >= 0) visit.Real(field, value);  // false for NaN too
  };
  integer(KernelArgField::kRegisters, args.registers_per_thread);
  integer(KernelArgField::kSharedMemory, args.shared_memory_bytes);
  real(KernelArgField::kBlocksPerSm, args.blocks_per_sm);
  real(KernelArgField::kWarpsPerSm, args.warps_per_sm);
  real(KernelArgField::kOccupancy, args.occupancy_percent);
  integer(KernelArgField::kDevice, args.device);
  integer(KernelArgField::kStream, args.stream);
  integer(KernelArgField::kCorrelation, args.correlation);
}

}  // namespace stepscope::trace
