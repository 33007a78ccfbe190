// What every model of the trainer offers the training loop (and, later, the towers of data
// parallelism): its variables, one forward+backward on a batch giving the loss and the
// gradients, and its own optimizer step on (possibly all-reduced) gradients. Each op runs on the
// model's device under a TensorFlow-named node (see trainer/runtime/graph.h).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/graph.h"
#include "trainer/runtime/tensor.h"

namespace stepscope::models {

// How an optimizer treats a variable (docs/trainers.md §3: weights decay, biases get twice the
// learning rate and no decay, normalization parameters their own decay).
enum class VariableRole : uint8_t { kWeight, kBias, kNormalization, kEmbedding };

struct Variable {
  std::string name;      // TF's variable name: "Model/softmax_w", "resnet50/conv1_conv/kernel"
  runtime::Tensor value;
  VariableRole role = VariableRole::kWeight;
};

// A gradient of one variable: dense, or sparse rows (TF's IndexedSlices: `values` rows for the
// variable's rows at `indices`, duplicates not summed).
struct Gradient {
  int variable = -1;          // index into Model::variables()
  runtime::Tensor values;
  runtime::Tensor indices;    // int32 (N); empty for a dense gradient
  const runtime::Node* producer = nullptr;  // the op that produced `values`
  bool sparse() const { return !indices.empty(); }
};

// A batch on the model's device. LSTM: inputs/labels int32 (B, T) word ids.
// ResNet: inputs float (B, H, W, 3) NHWC images, labels int32 (B).
struct Batch {
  runtime::Tensor inputs;
  runtime::Tensor labels;
};

struct StepResult {
  double loss = 0;        // LSTM: the sequence loss (sum over time of the batch mean); ResNet: mean
  int64_t correct = 0;    // ResNet: top-1 hits in the batch
  int64_t examples = 0;   // images, or words (B·T) for the LSTM
  std::vector<Gradient> gradients;
};

// Told that a variable's gradient is final: no later op of the step writes it, so it can be
// communicated while backward goes on. Runs on the thread computing the gradients; an error
// stops the step with that error.
using GradientReadyCallback = std::function<Status(const Gradient& gradient)>;

class Model {
 public:
  virtual ~Model() = default;
  virtual const runtime::Device& device() const = 0;
  virtual std::vector<Variable>& variables() = 0;
  // The graph holding every node name of a step (for tests and the profiler).
  virtual const runtime::Graph& graph() const = 0;

  // Forward and backward on `batch`; `loss_scale` multiplies the loss before differentiating
  // (1/N for towers that sum gradients, as Detectron does); StepResult.loss is not scaled.
  virtual StatusOr<StepResult> ComputeGradients(const Batch& batch, float loss_scale = 1.0f) = 0;
  // The model's optimizer step (with its clipping) on gradients shaped like ComputeGradients's.
  virtual Status ApplyGradients(std::span<const Gradient> gradients, float learning_rate) = 0;
  // Forget carried state (the LSTM's state across batches); a new epoch starts.
  virtual void ResetState() {}

  // Who is told of each gradient as it becomes final (empty: nobody). Set it before
  // ComputeGradientsReportingReady; it stays until replaced.
  void set_gradient_ready_callback(GradientReadyCallback callback) {
    gradient_ready_ = std::move(callback);
  }
  // ComputeGradients, with every gradient of the result passed to the callback exactly once:
  // during backward, in the order backward finishes them, by models that report as they go
  // (ReportsGradientsDuringBackward); otherwise after backward, in order.
  StatusOr<StepResult> ComputeGradientsReportingReady(const Batch& batch, float loss_scale = 1.0f) {
    reporting_ = true;
    StatusOr<StepResult> result = ComputeGradients(batch, loss_scale);
    reporting_ = false;
    if (!result.ok() || !gradient_ready_ || ReportsGradientsDuringBackward()) return result;
    for (const Gradient& gradient : result->gradients) RETURN_IF_ERROR(gradient_ready_(gradient));
    return result;
  }

 protected:
  // True for models that call ReportGradientReady for every gradient during ComputeGradients.
  virtual bool ReportsGradientsDuringBackward() const { return false; }
  // For those models: `gradient` is final. Only reported inside ComputeGradientsReportingReady,
  // so a plain ComputeGradients call never reaches the callback.
  Status ReportGradientReady(const Gradient& gradient) const {
    if (!reporting_ || !gradient_ready_) return Status::Ok();
    return gradient_ready_(gradient);
  }

 private:
  GradientReadyCallback gradient_ready_;
  bool reporting_ = false;
};

}  // namespace stepscope::models
