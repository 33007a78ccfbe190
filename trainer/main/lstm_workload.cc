// The LSTM's workload: replicas of the PTB model, ptb_word_lm's learning-rate decay by epoch,
// and perplexity per batch and over the epoch in the metrics and progress lines.
#include "trainer/main/lstm_workload.h"

#include <cmath>
#include <iomanip>

#include <nlohmann/json.hpp>

#include "trainer/main/training_loop.h"

namespace stepscope::trainer {

StatusOr<std::unique_ptr<Workload>> LstmWorkload::Create(const TrainOptions& options,
                                                         int run_towers) {
  ASSIGN_OR_RETURN(models::LstmConfig config, models::LstmConfigByName(options.config));
  config.seed = options.seed;
  if (options.batch_size > 0) config.batch_size = options.batch_size;
  if (options.learning_rate > 0) config.learning_rate = static_cast<float>(options.learning_rate);
  int vocab = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> data,
                   MakePtbSource(options.data_dir, config.batch_size * run_towers,
                                 config.num_steps, config.vocab_size, options.seed, &vocab));
  config.vocab_size = vocab;
  return std::unique_ptr<Workload>(new LstmWorkload(std::move(data), config, run_towers));
}

LstmWorkload::LstmWorkload(std::unique_ptr<BatchSource> data, const models::LstmConfig& config,
                           int run_towers)
    : Workload(std::move(data), config.batch_size,
               int64_t{config.batch_size} * config.num_steps * run_towers),
      config_(config) {}

StatusOr<std::unique_ptr<models::Model>> LstmWorkload::MakeReplica(
    const runtime::Device& device) const {
  return models::MakeLstm(device, config_);
}

float LstmWorkload::LearningRate(int epoch) const {
  return models::LstmLearningRate(config_, epoch);
}

void LstmWorkload::RecordStep(const StepRecord& step, nlohmann::json& line,
                              std::ostream& progress) {
  // A new epoch of the data (a resident load may have passed several) restarts the epoch's sum.
  if (step.epoch != epoch_) {
    epoch_ = step.epoch;
    epoch_cost_ = 0;
    epoch_batches_ = 0;
  }
  epoch_cost_ += step.loss;
  ++epoch_batches_;
  const double perplexity = std::exp(step.loss / config_.num_steps);
  line["perplexity"] = perplexity;
  progress << "  perplexity " << std::setprecision(1) << perplexity;
  if (step.step == 1) first_perplexity_ = perplexity;
  final_perplexity_ = perplexity;
}

double LstmWorkload::EpochPerplexity() const {
  if (epoch_batches_ == 0) return 0;
  return std::exp(epoch_cost_ / static_cast<double>(epoch_batches_ * config_.num_steps));
}

void LstmWorkload::Summarise(std::ostream& log, nlohmann::json& summary,
                             TrainingReport& report) const {
  report.first_perplexity = first_perplexity_;
  report.final_perplexity = final_perplexity_;
  report.epoch_perplexity = EpochPerplexity();
  log << std::fixed << "perplexity: first batch " << std::setprecision(1)
      << report.first_perplexity << ", last batch " << report.final_perplexity
      << ", last epoch so far " << report.epoch_perplexity << " (vocabulary "
      << config_.vocab_size << ")\n";
  summary["final_perplexity"] = report.final_perplexity;
  summary["epoch_perplexity"] = report.epoch_perplexity;
}

}  // namespace stepscope::trainer
