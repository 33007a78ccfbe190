// The PTB word LSTM as a training workload: PTB batches of word ids (or the built-in corpus),
// the config's learning-rate decay by epoch, and perplexity per batch and over the epoch so far
// (ptb_word_lm's run_epoch).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trainer/main/workload.h"
#include "trainer/models/lstm_model.h"

namespace stepscope::trainer {

class LstmWorkload final : public Workload {
 public:
  // The config named by options.config with the batch size, learning rate and seed given; its
  // vocabulary is the data's.
  static StatusOr<std::unique_ptr<Workload>> Create(const TrainOptions& options, int run_towers);

  std::string title() const override { return "lstm " + config_.name; }
  std::string trace_name() const override { return "lstm_" + config_.name; }
  const char* unit() const override { return "words/sec"; }

  StatusOr<std::unique_ptr<models::Model>> MakeReplica(
      const runtime::Device& device) const override;
  float LearningRate(int epoch) const override;

  void RecordStep(const StepRecord& step, nlohmann::json& line, std::ostream& progress) override;
  void Summarise(std::ostream& log, nlohmann::json& summary,
                 TrainingReport& report) const override;

 private:
  LstmWorkload(std::unique_ptr<BatchSource> data, const models::LstmConfig& config,
               int run_towers);
  // exp(summed losses / words per row) over the current epoch's steps: a batch's loss sums over
  // its num_steps time steps.
  double EpochPerplexity() const;

  models::LstmConfig config_;
  double first_perplexity_ = 0, final_perplexity_ = 0;
  int epoch_ = -1;  // of the steps summed below
  double epoch_cost_ = 0;
  int64_t epoch_batches_ = 0;
};

}  // namespace stepscope::trainer
