#!/usr/bin/env python3
"""PyTorch reference training-step times for the two models of stepscope's trainer, on the CPU or a GPU.

    python3 scripts/bench/torch_step_time.py [--threads 2] [--steps 10] [--warmup 3] [--device cpu|cuda]

A development-time comparison only: nothing in the product or CI imports torch. Needs
`pip install torch` (CPU wheels: `--index-url https://download.pytorch.org/whl/cpu`).

Models (docs/trainers.md section 6):
  lstm_small   PTB small word LSTM: vocab 10000, embedding 200, 2-layer LSTM hidden 200, 20
               unrolled steps, batch 20, softmax over the vocabulary; loss = sum over time of the
               batch-mean cross entropy; plain SGD lr 1.0 after clipping by global norm 5.
               The state is carried (detached) from step to step, as truncated BPTT does.
               PyTorch's embedding gradient is dense here (TF's is sparse rows).
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


class PtbSmallLstm(nn.Module):
    def __init__(self, vocab=10000, hidden=200, layers=2, init_scale=0.1):
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=layers)  # input (T, B, H)
        self.softmax_w = nn.Linear(hidden, vocab)
        for p in self.parameters():
            nn.init.uniform_(p, -init_scale, init_scale)

    def forward(self, ids, state):  # ids (T, B)
        x = self.embedding(ids)  # (T, B, H)
        y, state = self.lstm(x, state)  # (T, B, H)
        return self.softmax_w(y), state  # logits (T, B, V)


def lstm_step_fn(device="cpu", hidden=200, steps=20):
    batch, vocab, layers = 20, 10000, 2
    gen = torch.Generator().manual_seed(1)
    model = PtbSmallLstm(vocab, hidden, layers).to(device)
    ids = torch.randint(0, vocab, (steps + 1, batch), generator=gen).to(device)
    inputs, targets = ids[:-1], ids[1:]
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    state = [(torch.zeros(layers, batch, hidden, device=device),
              torch.zeros(layers, batch, hidden, device=device))]

    def step():
        h, c = state[0]
        logits, (h, c) = model(inputs, (h.detach(), c.detach()))
        # Sum over time of the batch-mean cross entropy.
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1),
                               reduction="sum") / batch
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        opt.step()
        state[0] = (h, c)
        return loss.item()

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
    args = parser.parse_args()
    if args.steps < 10:
        parser.error("--steps must be >= 10 (the median needs enough samples)")
    if args.threads < 1 or args.warmup < 1:
        parser.error("--threads and --warmup must be >= 1")

    torch.set_num_threads(args.threads)
    result = {"torch_version": torch.__version__, "device": args.device}
    if args.device == "cuda":
        # fp32 means fp32 on both sides: no TF32 rounding in cuBLAS or cuDNN.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        result["gpu"] = torch.cuda.get_device_name(0)
        cases = (("lstm_small_step_ms", lambda: lstm_step_fn("cuda")),
                 ("lstm_medium_step_ms", lambda: lstm_step_fn("cuda", hidden=650, steps=35)),
                 ("resnet50_img224_b64_step_ms", lambda: resnet_step_fn("cuda", 64, 224)))
    else:
        cases = (("lstm_small_step_ms", lstm_step_fn),
                 ("resnet50_img64_b8_step_ms", resnet_step_fn))
    for key, make in cases:
        # loss.item() in each step waits for the GPU, so host timers measure whole steps.
        times = time_steps(make(), args.warmup, args.steps)
        result[key] = round(statistics.median(times), 3)
        print(f"{key}: median {statistics.median(times):.2f} ms, mean "
              f"{statistics.fmean(times):.2f}, min {min(times):.2f}, max {max(times):.2f} "
              f"over {len(times)} steps", file=sys.stderr)
    result["threads"] = torch.get_num_threads()
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
