// The PTB word LSTM (TensorFlow's ptb_word_lm): embedding, a stack of LSTMBlockCells unrolled
// over num_steps, a softmax over the vocabulary, the sequence loss (sum over time of the batch
// mean), global-norm clipping and plain SGD, with the cell state carried from batch to batch.
// Node names follow a TF 1.x step of that model (samples/ptb_lstm_tf1_gpu_step.pbtxt).
//
// Dropout (keep_prob < 1: medium and large) is ptb_word_lm's: tf.nn.dropout on the embedding
// output and, through DropoutWrapper(output_keep_prob), on every LSTM layer's output at every
// step (the recurrent state is not dropped). Each site runs TF 1.x's dropout ops
//   <scope>/dropout/random_uniform/RandomUniform   u ~ U[0, 1)
//   <scope>/dropout/add                            keep_prob + u
//   <scope>/dropout/Floor                          mask: 1 with probability keep_prob, else 0
//   <scope>/dropout/div                            x / keep_prob
//   <scope>/dropout/mul                            (x / keep_prob) · mask
// and backward .../dropout/mul_grad/Mul (dy · mask) and .../dropout/div_grad/RealDiv
// (/ keep_prob), with <scope> Train/Model for the embedding and
// Train/Model/RNN/RNN/multi_rnn_cell/cell_<l> for layer l (dropout, dropout_1, ... per step).
// With keep_prob = 1 the graph has no dropout op at all.
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
  float keep_prob = 1.0f;  // in (0, 1]; 1 = no dropout
  uint64_t seed = 1;       // initial weights and dropout masks
  // Every step draws the same dropout masks (a fixed mask, as gradient checks need); normally
  // each step draws new ones.
  bool fixed_dropout_masks = false;
};

// small / medium / large of docs/trainers.md §6; kInvalidInput for another name.
StatusOr<LstmConfig> LstmConfigByName(const std::string& name);

// The learning rate of `epoch` (0-based): lr · lr_decay^max(epoch + 1 − max_epoch, 0).
float LstmLearningRate(const LstmConfig& config, int epoch);

// The model on `device` (CPU or GPU); kInvalidInput for a config out of range. Dropout masks come from `config.seed` and the
// device's index, so towers of one run draw different masks, and a run is repeatable.
StatusOr<std::unique_ptr<Model>> MakeLstm(const runtime::Device& device, const LstmConfig& config);

}  // namespace stepscope::models
