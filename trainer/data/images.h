// Labelled images for the ResNet trainer: CIFAR-10 binary batches when the user has them, or
// deterministic synthetic images a network can learn; both as NHWC float batches.
//
// A dataset keeps its images as 8-bit HWC pixels at their stored size (32x32 for CIFAR-10: the
// 50000 training images take 150 MB) and converts on the way out: bilinear resize to the size the
// model wants (tf.image.resize's half-pixel-centre rule) and per-channel normalisation
// (pixel / 255 - mean) / stddev. So a 224x224 model never holds 224x224 copies of the set.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace stepscope::data {

inline constexpr int kImageChannels = 3;
inline constexpr int kCifarImageSize = 32;
inline constexpr int kCifarClasses = 10;
inline constexpr int kCifarRecordBytes = 1 + kImageChannels * kCifarImageSize * kCifarImageSize;
inline constexpr int kCifarImagesPerBatchFile = 10000;
// Per-channel mean and standard deviation of the CIFAR-10 training images on [0, 1] (RGB).
inline constexpr std::array<float, 3> kCifarMean = {0.4914f, 0.4822f, 0.4465f};
inline constexpr std::array<float, 3> kCifarStddev = {0.2470f, 0.2435f, 0.2616f};

struct ImageDataset {
  int stored_size = 0;  // height = width of the stored images
  int num_classes = 0;
  std::vector<uint8_t> pixels;  // (num_images, stored_size, stored_size, 3), RGB
  std::vector<int32_t> labels;  // (num_images), each in [0, num_classes)
  std::array<float, 3> mean{};  // normalisation, per channel, on pixel / 255
  std::array<float, 3> stddev{};

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  // Writes image `index` as (image_size, image_size, 3) normalised floats.
  void CopyImage(int64_t index, int image_size, std::span<float> out) const;
};

enum class CifarSplit { kTrain, kTest };

// Reads data_batch_1.bin .. data_batch_5.bin (kTrain) or test_batch.bin (kTest) from `data_dir`,
// or from its cifar-10-batches-bin/ folder (where the official archive unpacks). Each record is
// a label byte and 3072 bytes of CHW pixels. A missing file is kNotFound naming its path; an
// empty file, a file whose size is not a whole number of records (the message names the
// truncated record and its bytes) or a label above 9 (the record index) is kInvalidInput.
StatusOr<ImageDataset> LoadCifar10(const std::string& data_dir, CifarSplit split);

// `num_images` images of `image_size`^2 pixels in `num_classes` balanced classes (image i has
// label i % num_classes). A class is a grating of its own orientation, spatial frequency and tint
// under a soft blob, with random phase, position, contrast and pixel noise, so telling classes
// apart takes oriented filters. Deterministic for the arguments. kInvalidInput for
// num_images < 1, image_size < 8 or num_classes < 2.
StatusOr<ImageDataset> MakeSyntheticImages(int64_t num_images, int image_size, int num_classes,
                                           uint64_t seed);

// Bilinear resize of an HWC image as tf.image.resize(method="bilinear") computes it
// (half-pixel centres, no antialiasing); `out` is (out_height, out_width, channels).
void ResizeBilinear(std::span<const uint8_t> in, int in_height, int in_width, int channels,
                    int out_height, int out_width, std::span<float> out);

// Cuts a dataset into batches, reshuffled at the start of every epoch with a permutation drawn
// from (seed, epoch). The last incomplete batch of an epoch is dropped (as tf_cnn_benchmarks
// does), so every batch is full.
class ImageBatcher {
 public:
  // kInvalidInput when batch_size is not in [1, dataset size] or image_size < 1.
  static StatusOr<ImageBatcher> Create(std::shared_ptr<const ImageDataset> dataset, int batch_size,
                                       int image_size, uint64_t seed, bool shuffle = true);

  int batch_size() const { return batch_size_; }
  int image_size() const { return image_size_; }
  int64_t batches_per_epoch() const { return dataset_->size() / batch_size_; }
  int64_t epoch() const { return epoch_; }  // of the batch Next() fills next

  // Fills `images` (batch_size, image_size, image_size, 3) and `labels` (batch_size) with the
  // next batch.
  void Next(std::span<float> images, std::span<int32_t> labels);

 private:
  ImageBatcher(std::shared_ptr<const ImageDataset> dataset, int batch_size, int image_size,
               uint64_t seed, bool shuffle);
  void StartEpoch();

  std::shared_ptr<const ImageDataset> dataset_;
  int batch_size_;
  int image_size_;
  uint64_t seed_;
  bool shuffle_;
  int64_t epoch_ = 0;
  int64_t next_batch_ = 0;  // within the epoch
  std::vector<int64_t> order_;
};

}  // namespace stepscope::data
