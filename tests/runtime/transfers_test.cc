// Data movement of the runtime (transfers.h): host to device and back, strided row blocks within
// a device, zero fills, on a CPU device and through a GPU device's calls (a stand-in over host
// memory: no GPU here), with clear errors for blocks that do not fit.
#include "trainer/runtime/transfers.h"

#include <gtest/gtest.h>

#include <array>
#include <numeric>
#include <tuple>

#include "host_memory_gpu.h"
#include "trainer/runtime/graph.h"
#include "trainer/runtime/ops.h"

namespace stepscope::runtime {
namespace {

std::unique_ptr<Device> NewCpuDevice() {
  return std::move(CreateDevices(*ParseDeviceSpec("cpu:1")).value()[0]);
}

std::vector<float> Iota(size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.0f);
  return v;
}

// A CPU device and the stand-in GPU (its transfers counted), for the tests that must hold on both.
class EveryKindOfDevice : public ::testing::Test {
 protected:
  std::array<const Device*, 2> devices() const { return {cpu.get(), gpu.get()}; }

  testing::GpuTransferCounts counts;
  const std::unique_ptr<Device> gpu = testing::MakeHostMemoryGpuDevice(0, &counts);
  const std::unique_ptr<Device> cpu = NewCpuDevice();
};

TEST_F(EveryKindOfDevice, RoundTripAndStridedRowsOnBoth) {
  for (const Device* device : devices()) {
    SCOPED_TRACE(device->name());
    Tensor src = *device->Allocate(DType::kFloat32, {4, 6});
    const std::vector<float> values = Iota(24);
    ASSERT_TRUE(CopyFromHost<float>(*device, values, src).ok());
    EXPECT_EQ(*ToHostVector<float>(*device, src), values);
    // Column block [2, 5) of every row into rows 1..4 of a (5, 3) tensor.
    Tensor dst = *device->Allocate(DType::kFloat32, {5, 3});
    ASSERT_TRUE(ZeroFill(*device, dst).ok());
    ASSERT_TRUE(CopyRowsWithin(*device, src, dst,
                               {.rows = 4, .row_elements = 3, .src_offset = 2, .src_stride = 6,
                                .dst_offset = 3, .dst_stride = 3})
                    .ok());
    const std::vector<float> expected = {0, 0, 0, 3, 4, 5, 9, 10, 11, 15, 16, 17, 21, 22, 23};
    EXPECT_EQ(*ToHostVector<float>(*device, dst), expected);
    // One row needs no stride.
    ASSERT_TRUE(CopyRowsWithin(*device, src, dst, {.rows = 1, .row_elements = 15, .src_offset = 9}).ok());
    const std::vector<float> tail(values.begin() + 9, values.end());
    EXPECT_EQ(*ToHostVector<float>(*device, dst), tail);
    // The ops that copy and fill go through the same calls.
    Graph graph;
    const Node& fill = graph.AddNode("zeros", "Fill");
    const Node& copy = graph.AddNode("copy", "Identity");
    EXPECT_EQ(*ToHostVector<float>(*device, *ops::Fill(*device, fill, DType::kFloat32, {3}, 0.0f)),
              std::vector<float>(3, 0.0f));
    EXPECT_EQ(*ToHostVector<float>(*device, *ops::Fill(*device, fill, DType::kFloat32, {2}, 2.5f)),
              std::vector<float>(2, 2.5f));
    EXPECT_EQ(*ToHostVector<float>(*device, *ops::Copy(*device, copy, src)), values);
  }
  EXPECT_GT(counts.to_device.load(), 0);
  EXPECT_GT(counts.to_host.load(), 0);
  EXPECT_EQ(counts.row_copies.load(), 3);  // two blocks and the Copy op
  EXPECT_EQ(counts.memsets.load(), 2);     // ZeroFill and the zero Fill
}

// A GPU's host copies go through its pinned allocator, in pieces of a bounded size, and give
// the pinned memory back; the bytes arrive whole whatever the piece boundaries.
TEST(Transfers, HostCopiesOfAGpuAreStagedThroughPinnedPieces) {
  testing::GpuTransferCounts counts;
  const auto gpu = testing::MakeHostMemoryGpuDevice(0, &counts);
  Allocator& pinned = *gpu->host_allocator();
  const int64_t piece_floats = kPinnedStagingPieceBytes / 4;
  const int64_t n = 2 * piece_floats + 1001;  // two whole pieces and a ragged one
  Tensor t = *gpu->Allocate(DType::kFloat32, {n});
  const std::vector<float> values = Iota(static_cast<size_t>(n));
  ASSERT_TRUE(CopyFromHost<float>(*gpu, values, t).ok());
  EXPECT_EQ(counts.to_device.load(), 3);
  EXPECT_EQ(pinned.Stats().num_allocs, 1);
  EXPECT_GE(pinned.Stats().peak_bytes_in_use, kPinnedStagingPieceBytes);
  EXPECT_LT(pinned.Stats().peak_bytes_in_use, 2 * kPinnedStagingPieceBytes);
  EXPECT_EQ(pinned.Stats().bytes_in_use, 0);
  EXPECT_EQ(*ToHostVector<float>(*gpu, t), values);
  EXPECT_EQ(counts.to_host.load(), 3);
  EXPECT_EQ(pinned.Stats().num_allocs, 2);
  EXPECT_EQ(pinned.Stats().bytes_in_use, 0);
  // A small copy holds only what it needs.
  Tensor one = *gpu->Allocate(DType::kFloat32, {1});
  ASSERT_TRUE(CopyFromHost<float>(*gpu, std::vector<float>{2.5f}, one).ok());
  EXPECT_EQ(*ToHostVector<float>(*gpu, one), std::vector<float>{2.5f});
  EXPECT_EQ(pinned.Stats().bytes_in_use, 0);
  // A CPU device has no pinned allocator and copies directly.
  EXPECT_EQ(NewCpuDevice()->host_allocator(), nullptr);
}

TEST(Transfers, BlocksThatDoNotFitAndMismatchedHostDataAreInvalidInput) {
  const auto cpu = NewCpuDevice();
  Tensor src = *cpu->Allocate(DType::kFloat32, {4, 6});
  Tensor dst = *cpu->Allocate(DType::kFloat32, {3, 3});
  const auto past_end = CopyRowsWithin(*cpu, src, dst,
                                       {.rows = 4, .row_elements = 3, .src_offset = 0,
                                        .src_stride = 6, .dst_offset = 0, .dst_stride = 3});
  EXPECT_EQ(past_end.code(), StatusCode::kInvalidInput);
  EXPECT_NE(past_end.message().find("float [3,3]"), std::string::npos) << past_end.message();
  // Rows that would overlap (stride shorter than a row).
  EXPECT_EQ(CopyRowsWithin(*cpu, src, dst,
                           {.rows = 2, .row_elements = 3, .src_offset = 0, .src_stride = 2,
                            .dst_offset = 0, .dst_stride = 3})
                .code(),
            StatusCode::kInvalidInput);
  EXPECT_EQ(CopyRowsWithin(*cpu, src, dst, {.rows = 1, .row_elements = 2, .src_offset = -1}).code(),
            StatusCode::kInvalidInput);
  Tensor ids = *cpu->Allocate(DType::kInt32, {9});
  EXPECT_EQ(CopyRowsWithin(*cpu, dst, ids, {.rows = 1, .row_elements = 9}).code(),
            StatusCode::kInvalidInput);  // float rows into an int32 tensor
  const std::vector<float> too_few(5);
  EXPECT_EQ(CopyFromHost<float>(*cpu, too_few, dst).code(), StatusCode::kInvalidInput);
  const std::vector<int32_t> wrong_type(9);
  EXPECT_EQ(CopyFromHost<int32_t>(*cpu, wrong_type, dst).code(), StatusCode::kInvalidInput);
  EXPECT_EQ(ToHostVector<int32_t>(*cpu, dst).status().code(), StatusCode::kInvalidInput);
  // Nothing to move is fine.
  EXPECT_TRUE(CopyRowsWithin(*cpu, src, dst, {.rows = 0, .row_elements = 3}).ok());
  EXPECT_TRUE(ToHostVector<float>(*cpu, Tensor()).value().empty());
}

// Every device counts what it was asked to do the same way (DeviceOpCounts): one per kernel
// call, copy within the device, memset, read into and write from the host; nothing for an empty
// transfer. The stand-in GPU's own calls agree.
TEST_F(EveryKindOfDevice, OperationsAreCountedAlikeOnBoth) {
  for (const Device* device : devices()) {
    SCOPED_TRACE(device->name());
    const DeviceOpCounts before = device->op_counts();
    Tensor t = *device->Allocate(DType::kFloat32, {2, 3});
    Tensor u = *device->Allocate(DType::kFloat32, {2, 3});
    ASSERT_TRUE(CopyFromHost<float>(*device, Iota(6), t).ok());
    ASSERT_TRUE(CopyRowsWithin(*device, t, u, {.rows = 2, .row_elements = 3, .src_stride = 3,
                                               .dst_stride = 3}).ok());
    ASSERT_TRUE(ZeroFill(*device, t).ok());
    Graph graph;
    ASSERT_TRUE(ops::Scale(*device, graph.AddNode("scale", "Mul"), u, 2.0f).ok());
    EXPECT_EQ(*ToHostVector<float>(*device, u), Iota(6));
    EXPECT_TRUE(ToHostVector<float>(*device, Tensor()).value().empty());  // nothing to read
    const DeviceOpCounts step = device->op_counts() - before;
    EXPECT_EQ(step, (DeviceOpCounts{.kernel_calls = 1, .device_copies = 1, .memsets = 1,
                                    .host_reads = 1, .host_writes = 1}));
    EXPECT_EQ(step.total(), 5);
  }
  EXPECT_EQ(counts.to_device.load(), 1);
  EXPECT_EQ(counts.row_copies.load(), 1);
  EXPECT_EQ(counts.memsets.load(), 1);
  EXPECT_EQ(counts.to_host.load(), 1);
}

// A view of strided rows shares its tensor's buffer (what the unrolled LSTM's slices hand on):
// its first element and row stride are the block's; it must fit; transfers that need one block
// of bytes refuse it, while a view of whole consecutive rows is dense and moves like a tensor.
TEST(Tensor, RowsViewSharesTheBufferAndIsRefusedWhereOneBlockIsNeeded) {
  const auto cpu = NewCpuDevice();
  Tensor t = *cpu->Allocate(DType::kFloat32, {4, 6});  // as (B=4, T=3, W=2)
  ASSERT_TRUE(CopyFromHost<float>(*cpu, Iota(24), t).ok());
  const StatusOr<Tensor> step1 = t.RowsView(2, 4, 2, 6);
  ASSERT_TRUE(step1.ok()) << step1.status().message();
  EXPECT_FALSE(step1->dense());
  EXPECT_EQ(step1->shape(), (Shape{4, 2}));
  EXPECT_EQ(step1->buffer(), t.buffer());
  EXPECT_EQ(step1->data<float>(), t.data<float>() + 2);
  EXPECT_EQ(step1->rows<float>().ld, 6);
  EXPECT_EQ(step1->data<float>()[6], 9.0f);  // row 1's first element of step 1
  EXPECT_EQ(ToHostVector<float>(*cpu, *step1).status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(ZeroFill(*cpu, *step1).code(), StatusCode::kInvalidInput);
  EXPECT_EQ(step1->Reshaped({8}).status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(step1->RowsView(0, 1, 2, 2).status().code(), StatusCode::kInvalidInput);  // of a view
  for (const auto& [offset, rows, cols, stride] :
       {std::tuple{int64_t{5}, int64_t{4}, int64_t{2}, int64_t{6}},  // past the end
        std::tuple{int64_t{0}, int64_t{3}, int64_t{4}, int64_t{3}},  // overlapping rows
        std::tuple{int64_t{-1}, int64_t{1}, int64_t{2}, int64_t{2}}}) {
    EXPECT_EQ(t.RowsView(offset, rows, cols, stride).status().code(), StatusCode::kInvalidInput)
        << offset << " " << rows << " " << cols << " " << stride;
  }
  // Rows 1 and 2 whole: consecutive, so dense, read from its own first element.
  const Tensor middle = *t.RowsView(6, 2, 6, 6);
  EXPECT_TRUE(middle.dense());
  const std::vector<float> all = Iota(24);
  EXPECT_EQ(*ToHostVector<float>(*cpu, middle), std::vector<float>(all.begin() + 6, all.begin() + 18));
}

}  // namespace
}  // namespace stepscope::runtime
