// Images: TF's bilinear resize on a case worked by hand, CIFAR-10 binaries written into a scratch
// directory (layout, labels, normalisation, upscaling, and every kind of bad file), synthetic
// images (determinism, balance, and that a simple classifier learns them), and batching.
#include "trainer/data/images.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "base/file_io.h"
#include "test_util.h"

namespace stepscope::data {
namespace {

namespace fs = std::filesystem;

TEST(ResizeBilinearTest, MatchesTensorFlowHalfPixelCentres) {
  // tf.image.resize([[0, 1], [2, 3]], [4, 4], "bilinear") on one channel.
  const std::vector<uint8_t> in = {0, 1, 2, 3};
  std::vector<float> out(16);
  ResizeBilinear(in, 2, 2, 1, 4, 4, out);
  const std::vector<float> expected = {0.0f, 0.25f, 0.75f, 1.0f, 0.5f, 0.75f, 1.25f, 1.5f,
                                       1.5f, 1.75f, 2.25f, 2.5f, 2.0f, 2.25f, 2.75f, 3.0f};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_FLOAT_EQ(out[i], expected[i]) << i;
  // Same size is the identity; channels stay apart.
  const std::vector<uint8_t> rgb = {10, 20, 30, 40, 50, 60};
  std::vector<float> same(6);
  ResizeBilinear(rgb, 1, 2, 3, 1, 2, same);
  EXPECT_EQ(same, (std::vector<float>{10, 20, 30, 40, 50, 60}));
}

// One CIFAR record: `label`, red = (pixel + seed) % 256, green = 100, blue = 255 - red.
std::string CifarRecord(int label, int seed) {
  std::string record(1, static_cast<char>(label));
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 1024; ++p) {
      const int red = (p + seed) % 256;
      const int value = c == 0 ? red : c == 1 ? 100 : 255 - red;
      record += static_cast<char>(value);
    }
  }
  return record;
}

float Normalised(int value, int channel) {
  return (static_cast<float>(value) / 255.0f - kCifarMean[static_cast<size_t>(channel)]) /
         kCifarStddev[static_cast<size_t>(channel)];
}

class CifarFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stepscope::testing::ScratchDir(
        "cifar_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    WriteBatches(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // Two records per training file (labels 0..9 across the five), three in the test file.
  static void WriteBatches(const fs::path& dir) {
    fs::create_directories(dir);
    for (int f = 1; f <= 5; ++f) {
      const int first = (f - 1) * 2;
      Write(dir / ("data_batch_" + std::to_string(f) + ".bin"),
            CifarRecord(first, first) + CifarRecord(first + 1, first + 1));
    }
    Write(dir / "test_batch.bin", CifarRecord(7, 70) + CifarRecord(8, 80) + CifarRecord(9, 90));
  }
  static void Write(const fs::path& path, const std::string& bytes) {
    ASSERT_TRUE(WriteFileAtomically(path.string(), bytes).ok());
  }
  fs::path dir_;
};

TEST_F(CifarFilesTest, LoadsLabelsAndPixelsInFileOrder) {
  auto train = LoadCifar10(dir_.string(), CifarSplit::kTrain);
  ASSERT_TRUE(train.ok()) << train.status().message();
  ASSERT_EQ(train->size(), 10);
  EXPECT_EQ(train->labels, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(train->stored_size, 32);
  EXPECT_EQ(train->num_classes, 10);
  // Image 3, pixel (row 2, column 5) = planar index 69: HWC in the dataset.
  const size_t at = (3 * 1024 + 69) * 3;
  EXPECT_EQ(train->pixels[at + 0], (69 + 3) % 256);
  EXPECT_EQ(train->pixels[at + 1], 100);
  EXPECT_EQ(train->pixels[at + 2], 255 - (69 + 3) % 256);

  auto test = LoadCifar10(dir_.string(), CifarSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status().message();
  EXPECT_EQ(test->labels, (std::vector<int32_t>{7, 8, 9}));
}

TEST_F(CifarFilesTest, ImagesComeOutNormalisedAndUpscaled) {
  auto test = LoadCifar10(dir_.string(), CifarSplit::kTest);
  ASSERT_TRUE(test.ok());
  std::vector<float> native(32 * 32 * 3);
  test->CopyImage(1, 32, native);  // seed 80
  const int pixel = 32 * 4 + 7;    // row 4, column 7
  EXPECT_FLOAT_EQ(native[pixel * 3 + 0], Normalised((pixel + 80) % 256, 0));
  EXPECT_FLOAT_EQ(native[pixel * 3 + 1], Normalised(100, 1));
  EXPECT_FLOAT_EQ(native[pixel * 3 + 2], Normalised(255 - (pixel + 80) % 256, 2));

  std::vector<float> big(64 * 64 * 3);
  test->CopyImage(1, 64, big);
  // A constant channel stays constant; a 2x upscale puts output (2y+1, 2x+1) a quarter of the
  // way from input (y, x) to (y+1, x+1) on each axis.
  for (size_t i = 1; i < big.size(); i += 3) ASSERT_FLOAT_EQ(big[i], Normalised(100, 1));
  const int y = 4, x = 7;
  const auto red = [](int row, int col) { return static_cast<float>((row * 32 + col + 80) % 256); };
  const float top = red(y, x) + 0.25f * (red(y, x + 1) - red(y, x));
  const float bottom = red(y + 1, x) + 0.25f * (red(y + 1, x + 1) - red(y + 1, x));
  const float expected = (top + 0.25f * (bottom - top)) / 255.0f;
  EXPECT_NEAR(big[((2 * y + 1) * 64 + (2 * x + 1)) * 3],
              (expected - kCifarMean[0]) / kCifarStddev[0], 1e-5);
}

TEST_F(CifarFilesTest, ArchiveFolderIsFound) {
  const fs::path nested = dir_ / "outer";
  WriteBatches(nested / "cifar-10-batches-bin");
  auto test = LoadCifar10(nested.string(), CifarSplit::kTest);
  ASSERT_TRUE(test.ok()) << test.status().message();
  EXPECT_EQ(test->size(), 3);
}

TEST_F(CifarFilesTest, TruncatedFileNamesFileAndRecord) {
  Write(dir_ / "data_batch_3.bin", CifarRecord(1, 1) + CifarRecord(2, 2) + std::string(100, 'x'));
  auto train = LoadCifar10(dir_.string(), CifarSplit::kTrain);
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(train.status().message(),
            (dir_ / "data_batch_3.bin").string() +
                ": record 2 is truncated (100 of 3073 bytes); a CIFAR-10 binary batch is a "
                "sequence of 3073-byte records");
}

TEST_F(CifarFilesTest, BadLabelMissingAndEmptyFiles) {
  Write(dir_ / "test_batch.bin", CifarRecord(1, 1) + CifarRecord(12, 2));
  auto bad_label = LoadCifar10(dir_.string(), CifarSplit::kTest);
  ASSERT_FALSE(bad_label.ok());
  EXPECT_EQ(bad_label.status().message(),
            (dir_ / "test_batch.bin").string() + ": record 1 has label 12, expected 0..9");

  fs::remove(dir_ / "data_batch_5.bin");
  auto missing = LoadCifar10(dir_.string(), CifarSplit::kTrain);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find((dir_ / "data_batch_5.bin").string()),
            std::string::npos);

  Write(dir_ / "data_batch_5.bin", "");
  auto empty = LoadCifar10(dir_.string(), CifarSplit::kTrain);
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(empty.status().message().find("data_batch_5.bin"), std::string::npos);
}

TEST(SyntheticImagesTest, DeterministicBalancedAndShaped) {
  auto a = MakeSyntheticImages(30, 16, 10, 5);
  auto b = MakeSyntheticImages(30, 16, 10, 5);
  auto c = MakeSyntheticImages(30, 16, 10, 6);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->pixels, b->pixels);
  EXPECT_NE(a->pixels, c->pixels);
  EXPECT_EQ(a->pixels.size(), 30u * 16 * 16 * 3);
  for (int i = 0; i < 30; ++i) EXPECT_EQ(a->labels[static_cast<size_t>(i)], i % 10);
  // Normalisation from the data itself: normalised pixels have mean ~0 and variance ~1.
  std::vector<float> image(16 * 16 * 3);
  double sum = 0, sum_squares = 0;
  for (int i = 0; i < 30; ++i) {
    a->CopyImage(i, 16, image);
    for (float v : image) {
      sum += v;
      sum_squares += v * v;
    }
  }
  const double n = 30.0 * 16 * 16 * 3;
  EXPECT_NEAR(sum / n, 0.0, 1e-3);
  EXPECT_NEAR(sum_squares / n, 1.0, 1e-2);
  EXPECT_FALSE(MakeSyntheticImages(0, 16, 10, 1).ok());
  EXPECT_FALSE(MakeSyntheticImages(10, 4, 10, 1).ok());
  EXPECT_FALSE(MakeSyntheticImages(10, 16, 1, 1).ok());
}

// Features a network can learn from: the mean colour and the orientation of the gradients
// (structure tensor), per image.
std::vector<double> Features(const ImageDataset& dataset, int64_t index) {
  const int s = dataset.stored_size;
  const uint8_t* p = dataset.pixels.data() + static_cast<size_t>(index) * s * s * 3;
  auto gray = [&](int y, int x) {
    const uint8_t* px = p + (static_cast<size_t>(y) * s + x) * 3;
    return (px[0] + px[1] + px[2]) / 765.0;
  };
  std::vector<double> f(6, 0.0);
  for (int i = 0; i < s * s * 3; ++i) f[static_cast<size_t>(i % 3)] += p[i] / 255.0 / (s * s);
  double xx = 0, yy = 0, xy = 0;
  for (int y = 1; y + 1 < s; ++y) {
    for (int x = 1; x + 1 < s; ++x) {
      const double gx = gray(y, x + 1) - gray(y, x - 1), gy = gray(y + 1, x) - gray(y - 1, x);
      xx += gx * gx;
      yy += gy * gy;
      xy += gx * gy;
    }
  }
  const double norm = xx + yy + 1e-9;
  f[3] = 3 * (xx - yy) / norm;  // orientation as a doubled-angle vector
  f[4] = 3 * 2 * xy / norm;
  f[5] = 3 * std::sqrt(norm / ((s - 2) * (s - 2)));  // gradient energy: spatial frequency
  return f;
}

TEST(SyntheticImagesTest, ClassesAreLearnable) {
  // Nearest class centroid on colour + gradient-orientation features, fitted on 400 images and
  // tested on 200 others: far above the 10% of chance.
  auto data = MakeSyntheticImages(600, 32, 10, 11);
  ASSERT_TRUE(data.ok());
  std::vector<std::vector<double>> centroid(10, std::vector<double>(6, 0.0));
  for (int64_t i = 0; i < 400; ++i) {
    const std::vector<double> f = Features(*data, i);
    for (size_t k = 0; k < 6; ++k) centroid[static_cast<size_t>(data->labels[i])][k] += f[k] / 40;
  }
  int correct = 0;
  for (int64_t i = 400; i < 600; ++i) {
    const std::vector<double> f = Features(*data, i);
    int best = 0;
    double best_distance = 1e300;
    for (int c = 0; c < 10; ++c) {
      double d = 0;
      for (size_t k = 0; k < 6; ++k) d += std::pow(f[k] - centroid[static_cast<size_t>(c)][k], 2);
      if (d < best_distance) best_distance = d, best = c;
    }
    correct += best == data->labels[static_cast<size_t>(i)];
  }
  std::printf("nearest-centroid accuracy on synthetic images: %d / 200\n", correct);
  EXPECT_GE(correct, 160);  // measured 196
}

TEST(ImageBatcherTest, EveryImageOncePerEpochInASeededOrder) {
  auto made = MakeSyntheticImages(10, 8, 10, 2);  // label i = image i
  ASSERT_TRUE(made.ok());
  auto dataset = std::make_shared<const ImageDataset>(std::move(made).value());
  auto batcher = ImageBatcher::Create(dataset, 3, 12, /*seed=*/9);
  ASSERT_TRUE(batcher.ok()) << batcher.status().message();
  EXPECT_EQ(batcher->batches_per_epoch(), 3);  // the 10th image waits for another epoch
  std::vector<float> images(3 * 12 * 12 * 3);
  std::vector<int32_t> labels(3);
  std::vector<std::vector<int32_t>> epochs(2);
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(batcher->epoch(), epoch);
    for (int b = 0; b < 3; ++b) {
      batcher->Next(images, labels);
      epochs[static_cast<size_t>(epoch)].insert(epochs[static_cast<size_t>(epoch)].end(),
                                                labels.begin(), labels.end());
      // The images are the labelled ones, resized to 12x12.
      std::vector<float> expected(12 * 12 * 3);
      dataset->CopyImage(labels[2], 12, expected);
      ASSERT_TRUE(std::equal(expected.begin(), expected.end(), images.begin() + 2 * 12 * 12 * 3));
    }
    const std::set<int32_t> distinct(epochs[static_cast<size_t>(epoch)].begin(),
                                     epochs[static_cast<size_t>(epoch)].end());
    EXPECT_EQ(distinct.size(), 9u);
  }
  EXPECT_NE(epochs[0], epochs[1]);  // reshuffled

  // The same seed gives the same batches; no shuffling gives file order.
  auto again = ImageBatcher::Create(dataset, 3, 12, 9);
  auto ordered = ImageBatcher::Create(dataset, 3, 12, 9, /*shuffle=*/false);
  ASSERT_TRUE(again.ok() && ordered.ok());
  std::vector<int32_t> first, in_order;
  for (int b = 0; b < 3; ++b) {
    again->Next(images, labels);
    first.insert(first.end(), labels.begin(), labels.end());
    ordered->Next(images, labels);
    in_order.insert(in_order.end(), labels.begin(), labels.end());
  }
  EXPECT_EQ(first, epochs[0]);
  EXPECT_EQ(in_order, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));

  EXPECT_FALSE(ImageBatcher::Create(dataset, 11, 12, 1).ok());
  EXPECT_FALSE(ImageBatcher::Create(dataset, 0, 12, 1).ok());
  EXPECT_FALSE(ImageBatcher::Create(dataset, 2, 0, 1).ok());
}

}  // namespace
}  // namespace stepscope::data
