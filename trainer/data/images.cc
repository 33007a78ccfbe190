// CIFAR-10 binary batches and deterministic built-in images kept as 8-bit pixels, resized
// (bilinear) and normalised into NHWC float batches in a seeded shuffled order.
#include "trainer/data/images.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <utility>

#include "base/check.h"
#include "base/file_io.h"
#include "base/random.h"

namespace stepscope::data {
namespace {

// tf.image.resize's bilinear weights for one axis (HalfPixelScaler + compute_interpolation_
// weights in tensorflow/core/kernels/image/resize_bilinear_op.cc).
struct AxisWeight {
  int lower = 0;
  int upper = 0;
  float lerp = 0;
};

std::vector<AxisWeight> AxisWeights(int in_size, int out_size) {
  std::vector<AxisWeight> weights(static_cast<size_t>(out_size));
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  for (int i = 0; i < out_size; ++i) {
    const float in = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float in_floor = std::floor(in);
    AxisWeight& w = weights[static_cast<size_t>(i)];
    w.lower = std::max(static_cast<int>(in_floor), 0);
    w.upper = std::min(static_cast<int>(std::ceil(in)), in_size - 1);
    w.lerp = in - in_floor;
  }
  return weights;
}

std::filesystem::path CifarDirectory(const std::string& data_dir, const char* probe_file) {
  const std::filesystem::path dir(data_dir);
  const std::filesystem::path nested = dir / "cifar-10-batches-bin";
  std::error_code error;
  if (!std::filesystem::exists(dir / probe_file, error) &&
      std::filesystem::is_directory(nested, error)) {
    return nested;
  }
  return dir;
}

Status AppendCifarFile(const std::string& path, ImageDataset& dataset) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  const size_t records = bytes.size() / kCifarRecordBytes;
  const size_t leftover = bytes.size() % kCifarRecordBytes;
  if (leftover != 0) {
    return InvalidInput(path + ": record " + std::to_string(records) + " is truncated (" +
                        std::to_string(leftover) + " of " + std::to_string(kCifarRecordBytes) +
                        " bytes); a CIFAR-10 binary batch is a sequence of 3073-byte records");
  }
  constexpr int kPlane = kCifarImageSize * kCifarImageSize;
  const size_t first_pixel = dataset.pixels.size();
  dataset.pixels.resize(first_pixel + records * kImageChannels * kPlane);
  for (size_t r = 0; r < records; ++r) {
    const auto* record = reinterpret_cast<const uint8_t*>(bytes.data()) + r * kCifarRecordBytes;
    if (record[0] >= kCifarClasses) {
      return InvalidInput(path + ": record " + std::to_string(r) + " has label " +
                          std::to_string(record[0]) + ", expected 0..9");
    }
    dataset.labels.push_back(record[0]);
    // CHW (red plane, green plane, blue plane) -> HWC.
    uint8_t* out = dataset.pixels.data() + first_pixel + r * kImageChannels * kPlane;
    for (int p = 0; p < kPlane; ++p) {
      for (int c = 0; c < kImageChannels; ++c)
        out[p * kImageChannels + c] = record[1 + c * kPlane + p];
    }
  }
  return Status::Ok();
}

}  // namespace

void ResizeBilinear(std::span<const uint8_t> in, int in_height, int in_width, int channels,
                    int out_height, int out_width, std::span<float> out) {
  STEPSCOPE_CHECK(in.size() == static_cast<size_t>(in_height) * in_width * channels);
  STEPSCOPE_CHECK(out.size() == static_cast<size_t>(out_height) * out_width * channels);
  const std::vector<AxisWeight> ys = AxisWeights(in_height, out_height);
  const std::vector<AxisWeight> xs = AxisWeights(in_width, out_width);
  const auto row_stride = static_cast<size_t>(in_width) * channels;
  size_t o = 0;
  for (const AxisWeight& y : ys) {
    const uint8_t* top = in.data() + static_cast<size_t>(y.lower) * row_stride;
    const uint8_t* bottom = in.data() + static_cast<size_t>(y.upper) * row_stride;
    for (const AxisWeight& x : xs) {
      const size_t left = static_cast<size_t>(x.lower) * channels;
      const size_t right = static_cast<size_t>(x.upper) * channels;
      for (int c = 0; c < channels; ++c) {
        const float top_value = top[left + c] + (top[right + c] - top[left + c]) * x.lerp;
        const float bottom_value =
            bottom[left + c] + (bottom[right + c] - bottom[left + c]) * x.lerp;
        out[o++] = top_value + (bottom_value - top_value) * y.lerp;
      }
    }
  }
}

void ImageDataset::CopyImage(int64_t index, int image_size, std::span<float> out) const {
  STEPSCOPE_CHECK(index >= 0 && index < size() && image_size > 0);
  const auto pixels_per_image =
      static_cast<size_t>(stored_size) * static_cast<size_t>(stored_size) * kImageChannels;
  const auto out_size =
      static_cast<size_t>(image_size) * static_cast<size_t>(image_size) * kImageChannels;
  STEPSCOPE_CHECK(out.size() == out_size);
  const std::span<const uint8_t> image(
      pixels.data() + static_cast<size_t>(index) * pixels_per_image, pixels_per_image);
  if (image_size == stored_size) {
    for (size_t i = 0; i < out_size; ++i) out[i] = image[i];
  } else {
    ResizeBilinear(image, stored_size, stored_size, kImageChannels, image_size, image_size, out);
  }
  std::array<float, kImageChannels> scale{}, shift{};
  for (int c = 0; c < kImageChannels; ++c) {
    scale[c] = 1.0f / (255.0f * stddev[c]);
    shift[c] = mean[c] / stddev[c];
  }
  for (size_t i = 0; i < out_size; ++i) {
    const size_t c = i % kImageChannels;
    out[i] = out[i] * scale[c] - shift[c];
  }
}

StatusOr<ImageDataset> LoadCifar10(const std::string& data_dir, CifarSplit split) {
  std::vector<std::string> files;
  if (split == CifarSplit::kTrain) {
    for (int i = 1; i <= 5; ++i) files.push_back("data_batch_" + std::to_string(i) + ".bin");
  } else {
    files.push_back("test_batch.bin");
  }
  const std::filesystem::path dir = CifarDirectory(data_dir, files[0].c_str());
  ImageDataset dataset;
  dataset.stored_size = kCifarImageSize;
  dataset.num_classes = kCifarClasses;
  dataset.mean = kCifarMean;
  dataset.stddev = kCifarStddev;
  dataset.labels.reserve(files.size() * kCifarImagesPerBatchFile);
  dataset.pixels.reserve(files.size() * kCifarImagesPerBatchFile * (kCifarRecordBytes - 1));
  for (const std::string& file : files) {
    RETURN_IF_ERROR(AppendCifarFile((dir / file).string(), dataset));
  }
  return dataset;
}

StatusOr<ImageDataset> MakeSyntheticImages(int64_t num_images, int image_size, int num_classes,
                                           uint64_t seed) {
  if (num_images < 1 || image_size < 8 || num_classes < 2) {
    return InvalidInput(
        "synthetic images need num_images >= 1, image_size >= 8 and at least 2 "
        "classes (got " +
        std::to_string(num_images) + ", " + std::to_string(image_size) + ", " +
        std::to_string(num_classes) + ")");
  }
  constexpr double kPi = 3.14159265358979323846;
  constexpr int kOrientations = 6;
  constexpr double kCyclesPerImage[] = {2.0, 3.5, 5.0};
  ImageDataset dataset;
  dataset.stored_size = image_size;
  dataset.num_classes = num_classes;
  const auto pixels_per_image =
      static_cast<size_t>(image_size) * static_cast<size_t>(image_size) * kImageChannels;
  dataset.pixels.resize(static_cast<size_t>(num_images) * pixels_per_image);
  dataset.labels.resize(static_cast<size_t>(num_images));
  std::array<double, kImageChannels> sum{}, sum_squares{};

  for (int64_t index = 0; index < num_images; ++index) {
    const int label = static_cast<int>(index % num_classes);
    dataset.labels[static_cast<size_t>(index)] = label;
    Rng rng(MixSeed(seed, static_cast<uint64_t>(index)));
    // What the class fixes: orientation, frequency and tint (a hue per class on the golden-ratio
    // walk, so neighbouring classes differ in colour too).
    const double angle = kPi * (label % kOrientations) / kOrientations + 0.08 * rng.Normal();
    const double cycles = kCyclesPerImage[(label / kOrientations) % 3];
    const double hue = std::fmod(label * 0.6180339887498949, 1.0);
    std::array<double, kImageChannels> tint{};
    for (int c = 0; c < kImageChannels; ++c) {
      tint[c] = 0.5 + 0.5 * std::cos(2 * kPi * (hue + c / 3.0));
    }
    // What varies inside a class: phase, position, contrast, noise.
    const double phase = 2 * kPi * rng.Uniform();
    const double center_x = 0.4 * (rng.Uniform() - 0.5), center_y = 0.4 * (rng.Uniform() - 0.5);
    const double contrast = 0.6 + 0.4 * rng.Uniform();
    const double cos_a = std::cos(angle), sin_a = std::sin(angle);
    uint8_t* out = dataset.pixels.data() + static_cast<size_t>(index) * pixels_per_image;
    for (int y = 0; y < image_size; ++y) {
      const double v = (y + 0.5) / image_size - 0.5;
      for (int x = 0; x < image_size; ++x) {
        const double u = (x + 0.5) / image_size - 0.5;
        const double wave = std::sin(2 * kPi * cycles * (u * cos_a + v * sin_a) + phase);
        const double du = u - center_x, dv = v - center_y;
        const double blob = std::exp(-(du * du + dv * dv) / (2 * 0.3 * 0.3));
        const double amplitude = 0.4 * contrast * blob * wave;
        for (int c = 0; c < kImageChannels; ++c) {
          const double base = 0.5 + 0.15 * (tint[c] - 0.5);
          double value = base + amplitude * (0.6 + 0.4 * tint[c]) + 0.06 * rng.Normal();
          value = std::clamp(value, 0.0, 1.0);
          const auto byte = static_cast<uint8_t>(std::lround(value * 255.0));
          *out++ = byte;
          sum[c] += byte / 255.0;
          sum_squares[c] += (byte / 255.0) * (byte / 255.0);
        }
      }
    }
  }
  const double count = static_cast<double>(num_images) * image_size * image_size;
  for (int c = 0; c < kImageChannels; ++c) {
    const double mean = sum[c] / count;
    const double variance = std::max(sum_squares[c] / count - mean * mean, 1e-6);
    dataset.mean[c] = static_cast<float>(mean);
    dataset.stddev[c] = static_cast<float>(std::sqrt(variance));
  }
  return dataset;
}

StatusOr<ImageBatcher> ImageBatcher::Create(std::shared_ptr<const ImageDataset> dataset,
                                            int batch_size, int image_size, uint64_t seed,
                                            bool shuffle) {
  STEPSCOPE_CHECK(dataset != nullptr);
  if (batch_size < 1 || batch_size > dataset->size()) {
    return InvalidInput("batch size " + std::to_string(batch_size) + " does not fit a dataset of " +
                        std::to_string(dataset->size()) + " images");
  }
  if (image_size < 1) {
    return InvalidInput("image size must be positive (got " + std::to_string(image_size) + ")");
  }
  return ImageBatcher(std::move(dataset), batch_size, image_size, seed, shuffle);
}

ImageBatcher::ImageBatcher(std::shared_ptr<const ImageDataset> dataset, int batch_size,
                           int image_size, uint64_t seed, bool shuffle)
    : dataset_(std::move(dataset)),
      batch_size_(batch_size),
      image_size_(image_size),
      seed_(seed),
      shuffle_(shuffle) {
  StartEpoch();
}

void ImageBatcher::StartEpoch() {
  order_.resize(static_cast<size_t>(dataset_->size()));
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (!shuffle_) return;
  Rng rng(MixSeed(seed_, static_cast<uint64_t>(epoch_)));
  for (size_t i = order_.size() - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(order_[i], order_[rng.Below(i + 1)]);
  }
}

void ImageBatcher::Next(std::span<float> images, std::span<int32_t> labels) {
  const auto image_floats =
      static_cast<size_t>(image_size_) * static_cast<size_t>(image_size_) * kImageChannels;
  STEPSCOPE_CHECK(images.size() == image_floats * static_cast<size_t>(batch_size_));
  STEPSCOPE_CHECK(labels.size() == static_cast<size_t>(batch_size_));
  for (int b = 0; b < batch_size_; ++b) {
    const int64_t index = order_[static_cast<size_t>(next_batch_ * batch_size_ + b)];
    dataset_->CopyImage(index, image_size_, images.subspan(b * image_floats, image_floats));
    labels[static_cast<size_t>(b)] = dataset_->labels[static_cast<size_t>(index)];
  }
  if (++next_batch_ == batches_per_epoch()) {
    next_batch_ = 0;
    ++epoch_;
    StartEpoch();
  }
}

}  // namespace stepscope::data
