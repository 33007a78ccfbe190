// ResNet as a training workload: CIFAR-10 (or built-in labelled images) at the model's image
// size, a constant learning rate (by default the linear scaling rule), and top-1 accuracy.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trainer/main/workload.h"
#include "trainer/models/resnet_model.h"

namespace stepscope::trainer {

class ResNetWorkload final : public Workload {
 public:
  // Depth, image size and classes from `options`; --batch_size defaults to 32 images per tower.
  static StatusOr<std::unique_ptr<Workload>> Create(const TrainOptions& options, int run_towers);

  std::string title() const override { return title_; }
  std::string trace_name() const override { return "resnet" + std::to_string(config_.depth); }
  const char* unit() const override { return "images/sec"; }

  StatusOr<std::unique_ptr<models::Model>> MakeReplica(
      const runtime::Device& device) const override;
  float LearningRate(int /*epoch*/) const override { return learning_rate_; }
  // Set when conv5's BatchNorm normalises fewer than kConv5ValuesToTrust values per channel.
  std::string Warning() const override { return warning_; }

  // conv5 is image_size / 32 on a side, so each tower's BatchNorm there normalises
  // batch × (image_size / 32)² values per channel. One value: it outputs its offset whatever the
  // image, and no gradient reaches the layers below (Create refuses, as PyTorch does). Two: it
  // outputs ±1 per channel, its gradient is zero except near ties, where it reaches 1/(2√ε) ≈ 158
  // per layer, and training diverges in PyTorch as here (docs/trainers.md §6); three still climbs.
  static constexpr int64_t kConv5ValuesToTrust = 4;

  void RecordStep(const StepRecord& step, nlohmann::json& line, std::ostream& progress) override;
  void Summarise(std::ostream& log, nlohmann::json& summary,
                 TrainingReport& report) const override;

 private:
  ResNetWorkload(std::unique_ptr<BatchSource> data, const models::ResNetConfig& config,
                 int64_t rows_per_tower, int64_t examples_per_step, float learning_rate,
                 std::string title);

  models::ResNetConfig config_;
  float learning_rate_;
  std::string title_;  // the --model name
  std::string warning_;
  double final_accuracy_ = 0;  // of the last batch
};

}  // namespace stepscope::trainer
