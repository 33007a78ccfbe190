// Resident-data mode: a train batch is truncated to whole minibatches per device, each device
// holds its own contiguous share in its own allocator, minibatch `i` of device `d` is exactly
// those rows, and an epoch's order is a seeded permutation.
#include "trainer/towers/resident_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace stepscope::trainer {
namespace {

using runtime::DType;

struct Fixture {
  std::vector<std::unique_ptr<runtime::Device>> owned;
  std::vector<runtime::Device*> devices;
  models::Batch batch;  // row r: inputs (r, t) = 100·r + t, labels r
};

Fixture MakeFixture(int num_devices, int64_t rows, int64_t row_width) {
  Fixture f;
  auto created = runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:" + std::to_string(num_devices)));
  f.owned = std::move(created.value());
  for (auto& d : f.owned) f.devices.push_back(d.get());
  f.batch.inputs = *f.owned[0]->Allocate(DType::kInt32, {rows, row_width});
  f.batch.labels = *f.owned[0]->Allocate(DType::kInt32, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < row_width; ++t) {
      f.batch.inputs.data<int32_t>()[r * row_width + t] = static_cast<int32_t>(100 * r + t);
    }
    f.batch.labels.data<int32_t>()[r] = static_cast<int32_t>(r);
  }
  return f;
}

TEST(ResidentDataTest, TruncatesToWholeMinibatchesAndServesEachDevicesRows) {
  // 3 devices × minibatch 4: 50 rows → 4 minibatches each (48 rows), 2 truncated.
  Fixture f = MakeFixture(3, 50, 5);
  auto data = ResidentData::Load(f.batch, f.devices, 4);
  ASSERT_TRUE(data.ok()) << data.status().message();
  EXPECT_EQ(data->num_devices(), 3);
  EXPECT_EQ(data->minibatches_per_device(), 4);
  EXPECT_EQ(data->truncated_rows(), 2);
  for (int d = 0; d < 3; ++d) {
    for (int64_t i = 0; i < 4; ++i) {
      auto mb = data->Minibatch(d, i);
      ASSERT_TRUE(mb.ok()) << mb.status().message();
      ASSERT_EQ(mb->inputs.shape()[0], 4);
      ASSERT_EQ(mb->inputs.shape()[1], 5);
      // It lives on device d's allocator, not the loader's.
      EXPECT_EQ(&mb->inputs.buffer()->allocator(), &f.devices[static_cast<size_t>(d)]->allocator());
      for (int64_t r = 0; r < 4; ++r) {
        const int64_t source_row = d * 16 + i * 4 + r;
        EXPECT_EQ(mb->labels.data<int32_t>()[r], source_row);
        EXPECT_EQ(mb->inputs.data<int32_t>()[r * 5 + 3], 100 * source_row + 3);
      }
    }
  }
  EXPECT_FALSE(data->Minibatch(3, 0).ok());
  EXPECT_FALSE(data->Minibatch(0, 4).ok());
  EXPECT_FALSE(data->Minibatch(0, -1).ok());
}

TEST(ResidentDataTest, EpochOrderIsASeededPermutation) {
  Fixture f = MakeFixture(2, 64, 2);
  auto data = ResidentData::Load(f.batch, f.devices, 2);  // 16 minibatches per device
  ASSERT_TRUE(data.ok());
  const std::vector<int64_t> a = data->EpochOrder(7, 0);
  std::vector<int64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 16; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
  EXPECT_EQ(data->EpochOrder(7, 0), a);  // same seed and epoch: same order
  std::set<std::vector<int64_t>> orders;
  for (int64_t epoch = 0; epoch < 5; ++epoch) orders.insert(data->EpochOrder(7, epoch));
  EXPECT_GE(orders.size(), 4u);  // epochs reshuffle (16! orders: collisions are negligible)
  EXPECT_NE(data->EpochOrder(8, 0), a);
}

TEST(ResidentDataTest, RejectsBatchesSmallerThanOneMinibatchPerDevice) {
  Fixture f = MakeFixture(4, 7, 1);
  auto data = ResidentData::Load(f.batch, f.devices, 2);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(data.status().message().find("7 rows is smaller than one 2-row minibatch on each of 4"),
            std::string::npos) << data.status().message();
  EXPECT_FALSE(ResidentData::Load(f.batch, f.devices, 0).ok());
  models::Batch mismatched = f.batch;
  mismatched.labels = *f.devices[0]->Allocate(DType::kInt32, {6});
  EXPECT_FALSE(ResidentData::Load(mismatched, f.devices, 1).ok());
}

}  // namespace
}  // namespace stepscope::trainer
