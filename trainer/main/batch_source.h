// Where a training run's batches come from: the PTB reader's batches of word ids, or image
// batches (CIFAR-10 or built-in), copied onto the device each step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "trainer/models/model.h"
#include "trainer/runtime/device.h"

namespace stepscope::trainer {

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t batches_per_epoch() const = 0;
  // Called before the first batch of each epoch (image data reshuffles here).
  virtual void StartEpoch(int epoch) = 0;
  // Batch `index` (< batches_per_epoch) of the current epoch, on `device`: a CPU device (the
  // input pipeline fills host memory; GPU runs give it a CPU device of its own).
  virtual StatusOr<models::Batch> Get(const runtime::Device& device, int64_t index) = 0;
  // What the data is, for the log ("PTB from DIR: 929589 words, vocabulary 10000").
  virtual std::string Describe() const = 0;
};

// PTB word ids from `data_dir`, or the built-in corpus when it is empty; batched as reader.py's
// ptb_producer does for `batch_size` rows of `num_steps`. `vocab_size` receives the vocabulary.
StatusOr<std::unique_ptr<BatchSource>> MakePtbSource(const std::string& data_dir, int batch_size,
                                                     int num_steps, int default_vocab_size,
                                                     uint64_t seed, int* vocab_size);

// CIFAR-10 from `data_dir` (upscaled to `image_size`), or built-in labelled images.
StatusOr<std::unique_ptr<BatchSource>> MakeImageSource(const std::string& data_dir, int batch_size,
                                                       int image_size, int num_classes,
                                                       uint64_t seed);

}  // namespace stepscope::trainer
