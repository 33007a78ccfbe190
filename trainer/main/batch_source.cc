// The data sources behind BatchSource: PTB batches of word ids (files or the built-in corpus) and
// image batches (CIFAR-10 or built-in images), allocated on the device each step.
#include "trainer/main/batch_source.h"

#include <algorithm>

#include "trainer/data/images.h"
#include "trainer/data/ptb.h"
#include "trainer/data/synthetic_text.h"

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
