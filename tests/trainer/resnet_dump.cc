// Writes what an outside replica of `stepscope-train --model resnet50` needs to train exactly as
// it does: the initial variables, the batches of the first steps (from the same image source and
// seed as the trainer), and the losses our model gives on them with the trainer's default
// learning rate. scripts/oracles/resnet_small_torch.py reads the directory.
//
//   trainer_resnet_dump OUT_DIR [--image_size 32] [--batch_size 2] [--steps 20] [--depth 50]
//                       [--num_classes 10] [--seed 1] [--learning_rate LR]
//
// OUT_DIR/manifest.json names every variable (Keras name, shape, role, offset in floats into
// variables.f32; the trainable ones first, their first-step gradients in gradients.f32 at the
// same offsets), the learning rate, and per step the loss, the top-1 hits and the offsets of
// its images (float NHWC in images.f32) and labels (int32 in labels.i32). Little-endian raw
// arrays. Exit codes: 0 written, 1 training failed, 2 bad flags or unwritable directory.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/flags.h"
#include "trainer/main/workload.h"
#include "trainer/runtime/device.h"
#include "trainer/runtime/transfers.h"

namespace stepscope {
namespace {

const char* RoleName(models::VariableRole role) {
  switch (role) {
    case models::VariableRole::kWeight: return "weight";
    case models::VariableRole::kBias: return "bias";
    case models::VariableRole::kNormalization: return "normalization";
    case models::VariableRole::kEmbedding: return "embedding";
  }
  return "?";
}

template <typename T>
Status Append(std::ofstream& out, const std::vector<T>& values, const std::string& path) {
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(T)));
  if (!out) return IoError(path + ": write failed");
  return Status::Ok();
}

Status Run(const std::vector<std::string>& args) {
  if (args.empty() || args[0].rfind("--", 0) == 0) {
    return InvalidInput("usage: trainer_resnet_dump OUT_DIR [stepscope-train's ResNet flags]");
  }
  const std::filesystem::path dir = args[0];
  // This tool's defaults are the small case; flags given later win.
  std::vector<std::string> train_args = {"--model", "resnet50", "--image_size", "32",
                                         "--batch_size", "2", "--steps", "20"};
  train_args.insert(train_args.end(), args.begin() + 1, args.end());
  ASSIGN_OR_RETURN(trainer::TrainOptions options, trainer::ParseTrainOptions(train_args));

  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidInput(dir.string() + ": cannot create: " + ec.message());

  ASSIGN_OR_RETURN(auto devices, runtime::CreateDevices(*runtime::ParseDeviceSpec("cpu:1")));
  const runtime::Device& device = *devices[0];
  ASSIGN_OR_RETURN(std::unique_ptr<trainer::Workload> workload, trainer::MakeWorkload(options, 1));
  ASSIGN_OR_RETURN(std::unique_ptr<models::Model> model, workload->MakeReplica(device));
  const float lr = workload->LearningRate(0);

  nlohmann::json manifest;
  manifest["command"] = "stepscope-train --model resnet50 --depth " +
                        std::to_string(options.depth) + " --image_size " +
                        std::to_string(options.image_size) + " --batch_size " +
                        std::to_string(options.batch_size) + " --num_classes " +
                        std::to_string(options.num_classes > 0 ? options.num_classes : 10) +
                        " --seed " + std::to_string(options.seed);
  manifest["depth"] = options.depth;
  manifest["image_size"] = options.image_size;
  manifest["batch_size"] = options.batch_size;
  manifest["num_classes"] = options.num_classes > 0 ? options.num_classes : 10;
  manifest["learning_rate"] = lr;

  const std::string vars_path = (dir / "variables.f32").string();
  std::ofstream vars(vars_path, std::ios::binary);
  int64_t offset = 0;
  for (const models::Variable& v : model->variables()) {
    ASSIGN_OR_RETURN(const std::vector<float> values, runtime::ToHostVector<float>(device, v.value));
    std::vector<int64_t> shape;
    for (int d = 0; d < v.value.shape().rank; ++d) shape.push_back(v.value.shape()[d]);
    manifest["variables"].push_back(
        {{"name", v.name}, {"shape", shape}, {"role", RoleName(v.role)}, {"offset", offset}});
    RETURN_IF_ERROR(Append(vars, values, vars_path));
    offset += static_cast<int64_t>(values.size());
  }

  const std::string images_path = (dir / "images.f32").string();
  const std::string labels_path = (dir / "labels.i32").string();
  std::ofstream images(images_path, std::ios::binary), labels(labels_path, std::ios::binary);
  int64_t image_offset = 0, label_offset = 0;
  trainer::BatchSource& data = workload->data();
  for (int64_t step = 0; step < options.steps; ++step) {
    ASSIGN_OR_RETURN(models::Batch batch, data.Get(device, step % data.batches_per_epoch()));
    ASSIGN_OR_RETURN(const std::vector<float> x, runtime::ToHostVector<float>(device, batch.inputs));
    ASSIGN_OR_RETURN(const std::vector<int32_t> y,
                     runtime::ToHostVector<int32_t>(device, batch.labels));
    RETURN_IF_ERROR(Append(images, x, images_path));
    RETURN_IF_ERROR(Append(labels, y, labels_path));
    ASSIGN_OR_RETURN(models::StepResult r, model->ComputeGradients(batch));
    if (step == 0) {  // the first step's gradients, of the dumped variables
      const std::string grads_path = (dir / "gradients.f32").string();
      std::ofstream grads(grads_path, std::ios::binary);
      for (const models::Gradient& g : r.gradients) {
        ASSIGN_OR_RETURN(const std::vector<float> values,
                         runtime::ToHostVector<float>(device, g.values));
        RETURN_IF_ERROR(Append(grads, values, grads_path));
      }
    }
    RETURN_IF_ERROR(model->ApplyGradients(r.gradients, lr));
    manifest["steps"].push_back({{"loss", r.loss},
                                 {"correct", r.correct},
                                 {"images_offset", image_offset},
                                 {"labels_offset", label_offset}});
    std::cout << "step " << step + 1 << " loss " << r.loss << "\n";
    image_offset += static_cast<int64_t>(x.size());
    label_offset += static_cast<int64_t>(y.size());
  }
  std::ofstream(dir / "manifest.json") << manifest.dump(1) << "\n";
  return Status::Ok();
}

}  // namespace
}  // namespace stepscope

int main(int argc, char** argv) {
  const stepscope::Status status = stepscope::Run(std::vector<std::string>(argv + 1, argv + argc));
  if (!status.ok()) {
    std::cerr << "trainer_resnet_dump: " << status.message() << "\n";
    return stepscope::ExitCodeFor(status);
  }
  return 0;
}
