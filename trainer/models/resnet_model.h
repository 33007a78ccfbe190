// ResNet v1 as Keras' `applications.ResNet50` builds it, trained by hand on trainer/runtime.
//
// Architecture (depth 50): conv1_pad (3) → conv1_conv 7×7/2 → conv1_bn → conv1_relu →
// pool1_pad (1) → pool1_pool 3×3/2 max → stages conv2..conv5 of bottleneck blocks
// ([3,4,6,3] blocks, 64/128/256/512 filters ×4 out) → avg_pool (global mean) → predictions
// (dense) → sparse softmax cross entropy. A block is 1_conv 1×1 → 2_conv 3×3 SAME → 3_conv 1×1
// (each with bias, then BN; ReLU after the first two), plus the input, added and ReLU'd
// (`_add`, `_out`). Block 1 of each stage has a convolution shortcut (`_0_conv`, `_0_bn`) and,
// in conv3..conv5, stride 2 on its FIRST 1×1 convolutions (v1; torchvision's v1.5 strides the
// 3×3). Other depths keep the scheme with other block counts: 14 [1,1,1,1], 26 [2,2,2,2],
// 38 [3,3,3,3], 101 [3,4,23,3], 152 [3,8,36,3].
//
// Names are TensorFlow 2's for a tf.function training step of the Keras model (as recorded in a
// real ResNet-50 run): forward ops under `resnet<depth>/` (`resnet50/conv2_block1_1_conv/Conv2D`,
// `.../BiasAdd`, `resnet50/conv2_block1_1_bn/FusedBatchNormV3`, `resnet50/conv2_block1_add/add`),
// their gradients under `gradient_tape/resnet<depth>/` (`.../Conv2D/Conv2DBackpropFilter`,
// `.../FusedBatchNormGradV3`, `.../ReluGrad`), the sums of a block input's two gradients as the
// tape's root-level `AddN`, `AddN_1`, ... (last block first), the loss as
// `SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits`, and the update of
// trainable variable N as `SGD/SGD/update_N/ResourceApplyKerasMomentum` (`update` for N = 0).
//
// Variables are named as Keras names them (`conv1_conv/kernel`, `conv1_bn/gamma`,
// `predictions/bias`, ...): every trainable variable first, in Keras' layer order (block 1's
// shortcut before its main path), then the BatchNorm moving statistics (`moving_mean`,
// `moving_variance`), which are updated by the forward pass (momentum 0.99) and get no gradient.
// Depth 50 with 1000 classes has Keras' 25,636,712 parameters (25,583,592 trainable).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "trainer/models/model.h"
#include "trainer/runtime/device.h"

namespace stepscope::models {

struct ResNetConfig {
  int depth = 50;
  int image_size = 224;  // square NHWC images with 3 channels; a multiple of 32, at least 32
  int num_classes = 1000;
  float weight_decay = 1e-4f;  // on convolution and dense kernels only (docs/trainers.md §3)
  float momentum = 0.9f;
  uint64_t seed = 1;  // He-normal kernels are drawn from it: same seed, same model
};

// Builds the model's variables (He-normal kernels, zero biases, BN gamma 1, beta 0, moving mean
// 0, moving variance 1) and every node of its training step on `device` (CPU or GPU).
// kInvalidInput for a depth other than 14, 26, 38, 50, 101, 152, an image size that is not a multiple of 32
// of at least 32, or fewer than 2 classes.
StatusOr<std::unique_ptr<Model>> MakeResNet(const runtime::Device& device,
                                            const ResNetConfig& config);

}  // namespace stepscope::models
