// The PTB word LSTM (TensorFlow's ptb_word_lm): embedding, a stack of LSTMBlockCells unrolled
// over num_steps, a softmax over the vocabulary, the sequence loss (sum over time of the batch
// mean), global-norm clipping and plain SGD, with the cell state carried from batch to batch.
// Node names follow a TF 1.x step of that model (samples/ptb_lstm_tf1_gpu_step.pbtxt).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "trainer/models/model.h"

namespace stepscope::models {

struct LstmConfig {
  std::string name = "small";
  int num_layers = 2;
  int hidden_size = 200;
  int num_steps = 20;
  int batch_size = 20;
  int vocab_size = 10000;
  float init_scale = 0.1f;
  float max_grad_norm = 5.0f;
  float learning_rate = 1.0f;
  float lr_decay = 0.5f;
  int max_epoch = 4;     // epochs at the full learning rate
  int max_max_epoch = 13;
  float keep_prob = 1.0f;  // dropout is not applied (see README)
  uint64_t seed = 1;
};

// small / medium / large of TRAINERS.md §6; kInvalidInput for another name.
StatusOr<LstmConfig> LstmConfigByName(const std::string& name);

// The learning rate of `epoch` (0-based): lr · lr_decay^max(epoch + 1 − max_epoch, 0).
float LstmLearningRate(const LstmConfig& config, int epoch);

StatusOr<std::unique_ptr<Model>> MakeLstm(const runtime::Device& device, const LstmConfig& config);

}  // namespace stepscope::models
