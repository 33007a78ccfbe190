// Copies into, out of and within device memory: memcpy on CPU devices, CUDA copies staged
// through pinned pieces on GPU devices, ordered with the compute stream.
#include "trainer/runtime/transfers.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace stepscope::runtime {
namespace {

// Whether a block's rows lie inside a tensor of `elements` elements without overlapping.
bool BlockFits(int64_t offset, int64_t stride, const RowBlock& block, int64_t elements) {
  if (block.rows < 0 || block.row_elements < 0 || offset < 0) return false;
  if (block.rows == 0 || block.row_elements == 0) return true;
  if (block.rows > 1 && stride < block.row_elements) return false;
  return offset + (block.rows - 1) * stride + block.row_elements <= elements;
}

// Runs copy_piece(staging, offset, piece_bytes) over `bytes` in pieces, with `staging` one
// buffer of the device's pinned host allocator, freed at the end.
template <typename CopyPiece>
Status ThroughPinnedPieces(const Device& device, int64_t bytes, CopyPiece copy_piece) {
  Allocator& pinned = *device.host_allocator();
  const int64_t piece = std::min(bytes, kPinnedStagingPieceBytes);
  ASSIGN_OR_RETURN(void* staging, pinned.Allocate(static_cast<size_t>(piece)));
  Status status;
  for (int64_t offset = 0; offset < bytes && status.ok(); offset += piece) {
    status = copy_piece(static_cast<char*>(staging), offset, std::min(piece, bytes - offset));
  }
  pinned.Deallocate(staging);
  return status;
}

// The first byte of a dense tensor (a view's own); kInvalidInput for a strided view, whose
// bytes are not one block.
StatusOr<char*> FirstByte(const Tensor& t, const char* what) {
  if (!t.dense()) return InvalidInput(std::string(what) + " of a strided view " + t.DebugString());
  return static_cast<char*>(t.buffer()->data()) + t.offset() * DTypeSize(t.dtype());
}

}  // namespace

Status CopyFromHost(const Device& device, const void* host, const Tensor& dst) {
  const int64_t bytes = dst.empty() ? 0 : dst.bytes();
  if (bytes == 0) return Status::Ok();
  ASSIGN_OR_RETURN(char* const to, FirstByte(dst, "copy from the host into"));
  device.CountOp(DeviceOp::kHostWrite);
  if (const GpuResources* gpu = device.gpu()) {
    const auto* from = static_cast<const char*>(host);
    return ThroughPinnedPieces(device, bytes, [&](char* staging, int64_t offset, int64_t n) {
      std::memcpy(staging, from + offset, static_cast<size_t>(n));
      return gpu->CopyHostToDevice(staging, to + offset, n);
    });
  }
  std::memcpy(to, host, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status CopyToHost(const Device& device, const Tensor& src, void* host) {
  const int64_t bytes = src.empty() ? 0 : src.bytes();
  if (bytes == 0) return Status::Ok();
  ASSIGN_OR_RETURN(const char* const from, FirstByte(src, "copy to the host"));
  device.CountOp(DeviceOp::kHostRead);
  if (const GpuResources* gpu = device.gpu()) {
    auto* to = static_cast<char*>(host);
    return ThroughPinnedPieces(device, bytes, [&](char* staging, int64_t offset, int64_t n) {
      RETURN_IF_ERROR(gpu->CopyDeviceToHost(from + offset, staging, n));
      std::memcpy(to + offset, staging, static_cast<size_t>(n));
      return Status::Ok();
    });
  }
  std::memcpy(host, from, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status CopyRowsWithin(const Device& device, const Tensor& src, const Tensor& dst,
                      const RowBlock& block) {
  if (src.dtype() != dst.dtype() || !BlockFits(block.src_offset, block.src_stride, block,
                                               src.num_elements()) ||
      !BlockFits(block.dst_offset, block.dst_stride, block, dst.num_elements())) {
    return InvalidInput("row copy of " + std::to_string(block.rows) + " x " +
                        std::to_string(block.row_elements) + " from " + src.DebugString() +
                        " (offset " + std::to_string(block.src_offset) + ", stride " +
                        std::to_string(block.src_stride) + ") to " + dst.DebugString() +
                        " (offset " + std::to_string(block.dst_offset) + ", stride " +
                        std::to_string(block.dst_stride) + ") does not fit");
  }
  if (block.rows == 0 || block.row_elements == 0) return Status::Ok();
  ASSIGN_OR_RETURN(const char* const src_start, FirstByte(src, "row copy"));
  ASSIGN_OR_RETURN(char* const dst_start, FirstByte(dst, "row copy"));
  device.CountOp(DeviceOp::kDeviceCopy);
  const int64_t size = DTypeSize(src.dtype());
  const char* const from = src_start + block.src_offset * size;
  char* const to = dst_start + block.dst_offset * size;
  if (const GpuResources* gpu = device.gpu()) {
    // A single row's stride is free; CUDA wants pitches of at least the row's width.
    const int64_t width = block.row_elements * size;
    return gpu->CopyRowsOnDevice(to, std::max(block.dst_stride * size, width), from,
                                 std::max(block.src_stride * size, width), width, block.rows);
  }
  for (int64_t r = 0; r < block.rows; ++r) {
    std::memcpy(to + r * block.dst_stride * size, from + r * block.src_stride * size,
                static_cast<size_t>(block.row_elements * size));
  }
  return Status::Ok();
}

Status ZeroFill(const Device& device, const Tensor& t) {
  const int64_t bytes = t.empty() ? 0 : t.bytes();
  if (bytes == 0) return Status::Ok();
  ASSIGN_OR_RETURN(char* const start, FirstByte(t, "zero fill"));
  device.CountOp(DeviceOp::kMemset);
  if (const GpuResources* gpu = device.gpu()) return gpu->MemsetOnDevice(start, 0, bytes);
  std::memset(start, 0, static_cast<size_t>(bytes));
  return Status::Ok();
}

Status SynchronizeDevice(const Device& device) {
  if (const GpuResources* gpu = device.gpu()) return gpu->Synchronize();
  return Status::Ok();
}

}  // namespace stepscope::runtime
