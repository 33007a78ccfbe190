#include "trainer/main/batch_source.h"

#include <algorithm>
#include <cstring>

#include "trainer/data/images.h"
#include "trainer/data/ptb.h"
#include "trainer/data/synthetic_text.h"
#include "trainer/runtime/transfers.h"

namespace stepscope::trainer {
namespace {

using runtime::DType;

// The built-in corpus: about a third of PTB's training words, the same vocabulary size.
constexpr int64_t kBuiltInCorpusWords = 300'000;
// Built-in images are kept at the training size; this bounds their memory.
constexpr int64_t kBuiltInImageBytes = int64_t{256} << 20;

class PtbSource final : public BatchSource {
 public:
  PtbSource(data::PtbBatcher batcher, std::string description)
      : batcher_(std::move(batcher)), description_(std::move(description)) {}

  int64_t batches_per_epoch() const override { return batcher_.epoch_size(); }
  void StartEpoch(int /*epoch*/) override {}  // reader.py walks the same strips every epoch
  StatusOr<models::Batch> Get(const runtime::Device& device, int64_t index) override {
    const runtime::Shape shape{batcher_.batch_size(), batcher_.num_steps()};
    models::Batch batch;
    ASSIGN_OR_RETURN(batch.inputs, device.Allocate(DType::kInt32, shape));
    ASSIGN_OR_RETURN(batch.labels, device.Allocate(DType::kInt32, shape));
    const size_t n = static_cast<size_t>(shape.num_elements());
    batcher_.Batch(index, {batch.inputs.data<int32_t>(), n}, {batch.labels.data<int32_t>(), n});
    return batch;
  }
  std::string Describe() const override { return description_; }

 private:
  data::PtbBatcher batcher_;
  std::string description_;
};

class ImageSource final : public BatchSource {
 public:
  ImageSource(data::ImageBatcher batcher, std::string description)
      : batcher_(std::move(batcher)), description_(std::move(description)) {}

  int64_t batches_per_epoch() const override { return batcher_.batches_per_epoch(); }
  void StartEpoch(int /*epoch*/) override {}  // the batcher reshuffles at each epoch's start
  // Batches come in the batcher's (shuffled) order; `index` only says where in the epoch we are.
  StatusOr<models::Batch> Get(const runtime::Device& device, int64_t /*index*/) override {
    const int64_t b = batcher_.batch_size(), s = batcher_.image_size();
    models::Batch batch;
    ASSIGN_OR_RETURN(batch.inputs, device.Allocate(DType::kFloat32, {b, s, s, 3}));
    ASSIGN_OR_RETURN(batch.labels, device.Allocate(DType::kInt32, {b}));
    batcher_.Next({batch.inputs.data<float>(), static_cast<size_t>(batch.inputs.num_elements())},
                  {batch.labels.data<int32_t>(), static_cast<size_t>(b)});
    return batch;
  }
  std::string Describe() const override { return description_; }

 private:
  data::ImageBatcher batcher_;
  std::string description_;
};

}  // namespace

StatusOr<std::unique_ptr<BatchSource>> MakePtbSource(const std::string& data_dir, int batch_size,
                                                     int num_steps, int default_vocab_size,
                                                     uint64_t seed, int* vocab_size) {
  data::PtbCorpus corpus;
  std::string description;
  if (data_dir.empty()) {
    ASSIGN_OR_RETURN(corpus, data::MakeSyntheticCorpus(default_vocab_size, kBuiltInCorpusWords, seed));
    description = "built-in corpus of " + std::to_string(corpus.train.size()) + " words";
  } else {
    ASSIGN_OR_RETURN(corpus, data::LoadPtb(data_dir));
    description = "PTB from " + data_dir + ": " + std::to_string(corpus.train.size()) + " words";
  }
  *vocab_size = corpus.vocabulary.size();
  description += ", vocabulary " + std::to_string(*vocab_size);
  ASSIGN_OR_RETURN(data::PtbBatcher batcher,
                   data::PtbBatcher::Create(corpus.train, batch_size, num_steps));
  return std::unique_ptr<BatchSource>(std::make_unique<PtbSource>(std::move(batcher), description));
}

StatusOr<std::unique_ptr<BatchSource>> MakeImageSource(const std::string& data_dir, int batch_size,
                                                       int image_size, int num_classes,
                                                       uint64_t seed) {
  auto dataset = std::make_shared<data::ImageDataset>();
  std::string description;
  if (data_dir.empty()) {
    const int64_t image_bytes = int64_t{image_size} * image_size * 3;
    const int64_t count = std::clamp<int64_t>(kBuiltInImageBytes / image_bytes, 4 * int64_t{batch_size},
                                              int64_t{8192});
    ASSIGN_OR_RETURN(*dataset, data::MakeSyntheticImages(count, image_size, num_classes, seed));
    description = "built-in images: " + std::to_string(count) + " of " +
                  std::to_string(image_size) + "x" + std::to_string(image_size) + ", " +
                  std::to_string(num_classes) + " classes";
  } else {
    ASSIGN_OR_RETURN(*dataset, data::LoadCifar10(data_dir, data::CifarSplit::kTrain));
    if (num_classes != data::kCifarClasses) {
      return InvalidInput("--num_classes " + std::to_string(num_classes) +
                          ": CIFAR-10 in " + data_dir + " has 10 classes");
    }
    description = "CIFAR-10 from " + data_dir + ": " + std::to_string(dataset->size()) +
                  " images upscaled to " + std::to_string(image_size);
  }
  ASSIGN_OR_RETURN(data::ImageBatcher batcher,
                   data::ImageBatcher::Create(dataset, batch_size, image_size, seed));
  return std::unique_ptr<BatchSource>(std::make_unique<ImageSource>(std::move(batcher), description));
}

}  // namespace stepscope::trainer

namespace stepscope::trainer {
namespace {

// Rows of `from` (in host memory, or already on `device`) into a new tensor on `device`.
StatusOr<runtime::Tensor> TensorRows(const runtime::Tensor& from, int64_t first, int64_t count,
                                     const runtime::Device& device) {
  runtime::Shape shape = from.shape();
  const int64_t row_elements = from.num_elements() / shape[0];
  shape.dims[0] = count;
  ASSIGN_OR_RETURN(runtime::Tensor to, device.Allocate(from.dtype(), shape));
  if (&from.buffer()->allocator() == &device.allocator()) {
    RETURN_IF_ERROR(runtime::CopyRowsWithin(
        device, from, to,
        {.rows = 1, .row_elements = count * row_elements, .src_offset = first * row_elements}));
  } else {
    RETURN_IF_ERROR(runtime::CopyFromHost(
        device,
        static_cast<const char*>(from.buffer()->data()) +
            first * row_elements * runtime::DTypeSize(from.dtype()),
        to));
  }
  return to;
}

}  // namespace

StatusOr<models::Batch> BatchRows(const models::Batch& batch, int64_t first, int64_t count,
                                  const runtime::Device& device) {
  const int64_t rows = batch.inputs.empty() || batch.inputs.shape().rank < 1
                           ? 0 : batch.inputs.shape()[0];
  if (batch.labels.empty() || batch.labels.shape().rank < 1 || batch.labels.shape()[0] != rows ||
      first < 0 || count < 1 || first + count > rows) {
    return InvalidInput("rows [" + std::to_string(first) + ", " + std::to_string(first + count) +
                        ") of a batch with inputs " + batch.inputs.DebugString() + " and labels " +
                        batch.labels.DebugString());
  }
  models::Batch rows_batch;
  ASSIGN_OR_RETURN(rows_batch.inputs, TensorRows(batch.inputs, first, count, device));
  ASSIGN_OR_RETURN(rows_batch.labels, TensorRows(batch.labels, first, count, device));
  return rows_batch;
}

StatusOr<models::Batch> ConcatBatches(std::span<const models::Batch> batches,
                                      const runtime::Device& device) {
  if (batches.empty()) return InvalidInput("no batches to concatenate");
  if (device.gpu() != nullptr) {
    return Internal("batches are concatenated in host memory, not on " + device.name());
  }
  models::Batch out;
  for (auto [member, into] : {std::pair{&models::Batch::inputs, &out.inputs},
                              std::pair{&models::Batch::labels, &out.labels}}) {
    runtime::Shape shape = (batches[0].*member).shape();
    int64_t rows = 0;
    for (const models::Batch& b : batches) {
      runtime::Shape other = (b.*member).shape();
      other.dims[0] = shape[0];
      if (!(other == shape) || (b.*member).dtype() != (batches[0].*member).dtype()) {
        return InvalidInput("cannot concatenate batches of shapes " +
                            (batches[0].*member).DebugString() + " and " + (b.*member).DebugString());
      }
      rows += (b.*member).shape()[0];
    }
    shape.dims[0] = rows;
    ASSIGN_OR_RETURN(*into, device.Allocate((batches[0].*member).dtype(), shape));
    char* dst = static_cast<char*>(into->buffer()->data());
    for (const models::Batch& b : batches) {
      std::memcpy(dst, (b.*member).buffer()->data(), static_cast<size_t>((b.*member).bytes()));
      dst += (b.*member).bytes();
    }
  }
  return out;
}

}  // namespace stepscope::trainer
