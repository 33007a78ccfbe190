#!/usr/bin/env python3
"""PyTorch reference training-step times for the two models of stepscope's trainer, on the CPU or a GPU.

    python3 scripts/bench/torch_step_time.py [--threads 2] [--steps 10] [--warmup 3] [--device cpu|cuda]
        [--models lstm_small,lstm_medium,resnet50] [--resnet_image N] [--resnet_batch N]
        [--lstm_batch N] [--times FILE] [--params]

A development-time comparison only: nothing in the product or CI imports torch. Needs
`pip install torch` (CPU wheels: `--index-url https://download.pytorch.org/whl/cpu`).

Models (docs/trainers.md section 6), built as stepscope-train builds them
(trainer/models/lstm_model.cc) so that the two step times compare like for like:
  lstm_small   PTB small word LSTM: vocab 10000, embedding 200, 2-layer LSTM hidden 200, 20
               unrolled steps, batch 20, softmax over the vocabulary, init U(-0.1, 0.1), no
               dropout (keep_prob 1); loss = sum over time of the batch-mean cross entropy; plain
               SGD lr 1.0 after clipping by global norm 5. The state is carried (detached) from
               step to step, as truncated BPTT does. PyTorch's embedding gradient is dense here
               (TF's is sparse rows).
  lstm_medium  the same with hidden 650, 35 unrolled steps, init U(-0.05, 0.05) and dropout
               keep_prob 0.5 where ptb_word_lm puts it: on the embedding output and on every
               layer's output at every step (DropoutWrapper(output_keep_prob)); the recurrent
               state is not dropped. nn.LSTM(dropout=0.5) drops layer 0's output on its way to
               layer 1, and an nn.Dropout drops the top layer's: 1 + 35 x 2 = 71 dropout sites a
               step, as in ours. Clip by global norm 5.
               Trainable parameters equal ours: LSTMBlockCell has one bias per layer, nn.LSTM two
               (bias_ih, bias_hh), so bias_hh is held at zero and not trained (the sum is the
               same function). Small: 4,651,600; medium: 19,775,200.
  resnet50     ResNet-50 v1 as Keras builds it: the stride sits on the first 1x1 of a block
               (torchvision's v1.5 moves it to the 3x3, so the network is built here), every
               convolution has a bias, BatchNorm eps 1.001e-5, stem = pad 3, 7x7/2 conv, BN, ReLU,
               pad 1, 3x3/2 max pool. 25,583,592 trainable parameters (checked). Images 64x64,
               batch 8, 1000 classes, softmax cross entropy, momentum SGD 0.9 with weight decay
               1e-4 on every parameter.

Each step is forward + backward + optimizer update on fixed random inputs (seeded). After
`--warmup` steps, `--steps` steps are timed one by one; the median is reported, in ms.
Output: one JSON object on stdout; per-model details (mean, min, max) go to stderr.
"""
import argparse
import json
import statistics
import sys
import time

import torch
from torch import nn
import torch.nn.functional as F

KERAS_RESNET50_TRAINABLE_PARAMS = 25_583_592


class PtbLstm(nn.Module):
    def __init__(self, vocab=10000, hidden=200, layers=2, init_scale=0.1, keep_prob=1.0):
        super().__init__()
        drop = 1.0 - keep_prob
        self.embedding = nn.Embedding(vocab, hidden)
        self.embedding_dropout = nn.Dropout(drop)
        # dropout= acts between layers only: layer l's output on its way to layer l + 1.
        self.lstm = nn.LSTM(hidden, hidden, num_layers=layers, dropout=drop)  # input (T, B, H)
        self.output_dropout = nn.Dropout(drop)  # the top layer's output on its way to the softmax
        self.softmax_w = nn.Linear(hidden, vocab)
        for p in self.parameters():
            nn.init.uniform_(p, -init_scale, init_scale)
        # One bias per layer, as LSTMBlockCell has (starting at zero as ours does): bias_hh stays 0.
        for name, p in self.lstm.named_parameters():
            if name.startswith("bias_"):
                nn.init.zeros_(p)
            if name.startswith("bias_hh"):
                p.requires_grad_(False)

    def forward(self, ids, state):  # ids (T, B)
        x = self.embedding_dropout(self.embedding(ids))  # (T, B, H)
        y, state = self.lstm(x, state)  # (T, B, H)
        return self.softmax_w(self.output_dropout(y)), state  # logits (T, B, V)


# ptb_word_lm's configs as trainer/models/lstm_model.cc's LstmConfigByName has them.
PTB_CONFIGS = {
    "small": dict(hidden=200, steps=20, init_scale=0.1, keep_prob=1.0, max_grad_norm=5.0),
    "medium": dict(hidden=650, steps=35, init_scale=0.05, keep_prob=0.5, max_grad_norm=5.0),
}


def trainable_params(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def ptb_trainable_params(vocab, hidden, layers):
    """stepscope-train's count: embedding, per layer kernel [2H, 4H] and bias [4H], softmax."""
    return vocab * hidden + layers * (2 * hidden * 4 * hidden + 4 * hidden) + hidden * vocab + vocab


def lstm_step_fn(device="cpu", config="small", batch=20):
    c = PTB_CONFIGS[config]
    hidden, steps = c["hidden"], c["steps"]
    vocab, layers = 10000, 2
    gen = torch.Generator().manual_seed(1)
    torch.manual_seed(1)  # the initial weights and the dropout masks
    model = PtbLstm(vocab, hidden, layers, c["init_scale"], c["keep_prob"]).to(device).train()
    trainable = trainable_params(model)
    if trainable != ptb_trainable_params(vocab, hidden, layers):
        raise SystemExit(f"LSTM {config} has {trainable} trainable parameters, stepscope-train's "
                         f"has {ptb_trainable_params(vocab, hidden, layers)}: built wrong")
    params = [p for p in model.parameters() if p.requires_grad]
    ids = torch.randint(0, vocab, (steps + 1, batch), generator=gen).to(device)
    inputs, targets = ids[:-1], ids[1:]
    opt = torch.optim.SGD(params, lr=1.0)
    state = [(torch.zeros(layers, batch, hidden, device=device),
              torch.zeros(layers, batch, hidden, device=device))]

    def step():
        h, c_ = state[0]
        logits, (h, c_) = model(inputs, (h.detach(), c_.detach()))
        # Sum over time of the batch-mean cross entropy.
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1),
                               reduction="sum") / batch
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(params, max_norm=c["max_grad_norm"])
        opt.step()
        state[0] = (h, c_)
        return loss.item()

    step.trainable = trainable
    return step


class Bottleneck(nn.Module):
    """Keras ResNet50 conv_block (projection shortcut) / identity_block."""

    def __init__(self, in_c, mid_c, out_c, stride, project):
        super().__init__()
        eps = 1.001e-5
        self.conv1 = nn.Conv2d(in_c, mid_c, 1, stride=stride)  # v1: stride on the first 1x1
        self.bn1 = nn.BatchNorm2d(mid_c, eps=eps)
        self.conv2 = nn.Conv2d(mid_c, mid_c, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(mid_c, eps=eps)
        self.conv3 = nn.Conv2d(mid_c, out_c, 1)
        self.bn3 = nn.BatchNorm2d(out_c, eps=eps)
        self.shortcut = None
        if project:
            self.shortcut = nn.Sequential(nn.Conv2d(in_c, out_c, 1, stride=stride),
                                          nn.BatchNorm2d(out_c, eps=eps))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet50V1(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.ZeroPad2d(3), nn.Conv2d(3, 64, 7, stride=2), nn.BatchNorm2d(64, eps=1.001e-5),
            nn.ReLU(), nn.ZeroPad2d(1), nn.MaxPool2d(3, stride=2))
        blocks = []
        in_c = 64
        for mid_c, count, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(count):
                blocks.append(Bottleneck(in_c, mid_c, 4 * mid_c, stride if i == 0 else 1,
                                         project=(i == 0)))
                in_c = 4 * mid_c
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(in_c, classes)

    def forward(self, x):  # x (N, 3, H, W)
        y = self.blocks(self.stem(x))
        return self.fc(torch.mean(y, dim=(2, 3)))


def resnet_step_fn(device="cpu", batch=8, image=64):
    classes = 1000
    torch.manual_seed(2)
    model = ResNet50V1(classes)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    if trainable != KERAS_RESNET50_TRAINABLE_PARAMS:
        raise SystemExit(f"ResNet-50 has {trainable} trainable parameters, Keras's has "
                         f"{KERAS_RESNET50_TRAINABLE_PARAMS}: the network is built wrong")
    model.to(device).train()
    gen = torch.Generator().manual_seed(3)
    images = torch.randn(batch, 3, image, image, generator=gen).to(device)
    labels = torch.randint(0, classes, (batch,), generator=gen).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    step = classifier_train_step(model, images, labels, opt)
    step.trainable = trainable
    return step


def classifier_train_step(model, images, labels, opt):
    """One training step of an image classifier (cross-entropy, then `opt`), returning the loss:
    the step this benchmark times and scripts/gpu/torch_fixtures.py profiles."""
    def step():
        loss = F.cross_entropy(model(images), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def time_steps(step, warmup, steps):
    for _ in range(warmup):
        step()
    times_ms = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times_ms.append((time.perf_counter() - t0) * 1e3)
    return times_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10, help="timed steps (>= 10)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="cuda: the GPU shapes (LSTM small and medium, ResNet-50 at 224 with "
                             "batch 64), fp32 without TF32")
    parser.add_argument("--models", default=None,
                        help="comma-separated subset of lstm_small, lstm_medium, resnet50 "
                             "(default: cuda all three; cpu lstm_small and resnet50)")
    parser.add_argument("--resnet_image", type=int, default=None,
                        help="ResNet-50 image size (default: cuda 224, cpu 64)")
    parser.add_argument("--resnet_batch", type=int, default=None,
                        help="ResNet-50 batch (default: cuda 64, cpu 8)")
    parser.add_argument("--lstm_batch", type=int, default=20, help="LSTM batch (default 20)")
    parser.add_argument("--times", metavar="FILE",
                        help="also write every timed step's ms per model as JSON to FILE")
    parser.add_argument("--params", action="store_true",
                        help="only print each model's trainable parameter count, then exit")
    args = parser.parse_args()
    if args.steps < 10:
        parser.error("--steps must be >= 10 (the median needs enough samples)")
    if args.threads < 1 or args.warmup < 1:
        parser.error("--threads and --warmup must be >= 1")
    cuda = args.device == "cuda"
    models = (args.models or ("lstm_small,lstm_medium,resnet50" if cuda else "lstm_small,resnet50")
              ).split(",")
    unknown = set(models) - {"lstm_small", "lstm_medium", "resnet50"}
    if unknown:
        parser.error(f"--models: unknown {', '.join(sorted(unknown))}")
    image = args.resnet_image or (224 if cuda else 64)
    resnet_batch = args.resnet_batch or (64 if cuda else 8)

    torch.set_num_threads(args.threads)
    result = {"torch_version": torch.__version__, "device": args.device}
    if cuda:
        # fp32 means fp32 on both sides: no TF32 rounding in cuBLAS or cuDNN.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        result["gpu"] = torch.cuda.get_device_name(0)
    # Keys as before (scripts/gpu/figures.py reads them); the LSTM's carry their batch when it is
    # not ptb_word_lm's 20.
    lstm_suffix = "" if args.lstm_batch == 20 else f"_b{args.lstm_batch}"
    makers = {
        "lstm_small": (f"lstm_small{lstm_suffix}_step_ms",
                       lambda: lstm_step_fn(args.device, "small", args.lstm_batch)),
        "lstm_medium": (f"lstm_medium{lstm_suffix}_step_ms",
                        lambda: lstm_step_fn(args.device, "medium", args.lstm_batch)),
        "resnet50": (f"resnet50_img{image}_b{resnet_batch}_step_ms",
                     lambda: resnet_step_fn(args.device, resnet_batch, image)),
    }
    all_times = {}
    for model in models:
        key, make = makers[model]
        step = make()
        result[model + "_trainable_params"] = step.trainable
        if args.params:
            continue
        # loss.item() in each step waits for the GPU, so host timers measure whole steps.
        times = time_steps(step, args.warmup, args.steps)
        all_times[model] = times
        result[key] = round(statistics.median(times), 3)
        print(f"{key}: median {statistics.median(times):.2f} ms, mean "
              f"{statistics.fmean(times):.2f}, min {min(times):.2f}, max {max(times):.2f} "
              f"over {len(times)} steps", file=sys.stderr)
    result["threads"] = torch.get_num_threads()
    if args.times:
        with open(args.times, "w") as f:
            json.dump({"device": args.device, "step_ms": all_times}, f)
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
