// ResNet's workload: replicas at the requested depth and image size, a constant learning rate
// (0.1 × batch / 256 by default), and top-1 accuracy in the metrics and progress lines.
#include "trainer/main/resnet_workload.h"

#include <iomanip>
#include <utility>

#include <nlohmann/json.hpp>

#include "trainer/main/training_loop.h"

namespace stepscope::trainer {

StatusOr<std::unique_ptr<Workload>> ResNetWorkload::Create(const TrainOptions& options,
                                                           int run_towers) {
  models::ResNetConfig config;
  config.depth = options.depth;
  config.image_size = options.image_size;
  config.num_classes = options.num_classes > 0 ? options.num_classes : 10;
  config.seed = options.seed;
  const int batch = options.batch_size > 0 ? options.batch_size : 32;
  const int64_t conv5_side = options.image_size / 32;
  const int64_t conv5_values = int64_t{batch} * conv5_side * conv5_side;
  const std::string shape = "--batch_size " + std::to_string(batch) + " per device at --image_size " +
                            std::to_string(options.image_size) + " (conv5 " +
                            std::to_string(conv5_side) + "x" + std::to_string(conv5_side) + ")";
  if (conv5_values < 2) {
    return InvalidInput(shape + ": conv5's BatchNorm would normalise 1 value per channel, which "
                        "outputs its offset whatever the image; use a batch of at least " +
                        std::to_string(kConv5ValuesToTrust) + " or a larger image");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<BatchSource> data,
                   MakeImageSource(options.data_dir, batch * run_towers, options.image_size,
                                   config.num_classes, options.seed));
  const int64_t examples_per_step = int64_t{batch} * run_towers;
  // Default: the linear scaling rule, 0.1 per 256 images of global batch (Goyal et al.).
  const float learning_rate = options.learning_rate > 0
                                  ? static_cast<float>(options.learning_rate)
                                  : 0.1f * static_cast<float>(examples_per_step) / 256.0f;
  auto workload = std::unique_ptr<ResNetWorkload>(new ResNetWorkload(
      std::move(data), config, batch, examples_per_step, learning_rate, options.model));
  if (conv5_values < kConv5ValuesToTrust) {
    workload->warning_ = shape + ": conv5's BatchNorm normalises only " +
                         std::to_string(conv5_values) +
                         " values per channel; its gradient spikes near ties and training "
                         "diverges (PyTorch's too; docs/trainers.md §6). Use a batch of at least " +
                         std::to_string((kConv5ValuesToTrust + conv5_side * conv5_side - 1) /
                                        (conv5_side * conv5_side)) +
                         " or a larger image";
  }
  return std::unique_ptr<Workload>(std::move(workload));
}

ResNetWorkload::ResNetWorkload(std::unique_ptr<BatchSource> data,
                               const models::ResNetConfig& config, int64_t rows_per_tower,
                               int64_t examples_per_step, float learning_rate, std::string title)
    : Workload(std::move(data), rows_per_tower, examples_per_step),
      config_(config),
      learning_rate_(learning_rate),
      title_(std::move(title)) {}

StatusOr<std::unique_ptr<models::Model>> ResNetWorkload::MakeReplica(
    const runtime::Device& device) const {
  return models::MakeResNet(device, config_);
}

void ResNetWorkload::RecordStep(const StepRecord& step, nlohmann::json& line,
                                std::ostream& progress) {
  const double accuracy =
      static_cast<double>(step.correct) / static_cast<double>(examples_per_step());
  line["accuracy"] = accuracy;
  progress << "  accuracy " << std::setprecision(3) << accuracy;
  final_accuracy_ = accuracy;
}

void ResNetWorkload::Summarise(std::ostream& log, nlohmann::json& summary,
                               TrainingReport& report) const {
  report.final_accuracy = final_accuracy_;
  log << std::fixed << "loss: first " << std::setprecision(4) << report.first_loss << ", last "
      << report.final_loss << "; accuracy on the last batch " << std::setprecision(3)
      << report.final_accuracy << "\n";
  summary["final_accuracy"] = report.final_accuracy;
}

}  // namespace stepscope::trainer
