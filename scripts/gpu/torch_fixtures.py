#!/usr/bin/env python3
"""Records real PyTorch GPU fixtures for stepscope's readers and analyses (tests/data):

    python3 scripts/gpu/torch_fixtures.py --out DIR [--device cuda|cpu] [--tiny]

A development-time tool, run by scripts/gpu/gpu-run.sh's samples stage on a GPU machine that has
PyTorch; nothing in the product or its tests imports torch.

Writes, each gzipped and small enough for tests/data:
  torch_resnet50_train.json.gz     torch.profiler trace (Kineto's Chrome JSON) of ResNet-50
                                   training steps (torchvision's, batch 16, 224x224, fp32, SGD)
  torch_transformer_train.json.gz  the same for a small transformer encoder language model (4
                                   layers, d_model 256, 4 heads, sequence 128, batch 16, AdamW)
  torch_resnet50_memory_snapshot.pickle.gz
                                   torch.cuda.memory._dump_snapshot of the same ResNet-50 run
                                   (every allocation and free with its stack, and the segments),
                                   CUDA only
Both traces profile 2 steps after 1 wait and 1 warm-up step (torch.profiler.schedule) with
record_shapes, with_flops, profile_memory and with_stack, CPU and (on CUDA) CUDA activities.
--device cpu records the CPU-side traces only (no CUDA activity, no snapshot: said on stderr);
--tiny shrinks the shapes (batch 2, 64x64 images, sequence 16) for a quick check on a CPU.
Prints one line per file written: name, bytes, trace events.
"""
import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "bench"))
import torch_step_time  # noqa: E402  (the benchmark's networks and training step)


def resnet50(classes=1000):
    """torchvision's ResNet-50 when torchvision is there, else the Keras v1 build of
    scripts/bench/torch_step_time.py (the same 25.6 M parameters, stride on the first 1x1)."""
    try:
        import torchvision
        return torchvision.models.resnet50(num_classes=classes), "torchvision resnet50"
    except ImportError:
        return torch_step_time.ResNet50V1(classes), "ResNet-50 v1 (scripts/bench/torch_step_time.py)"


class TinyTransformerLm(nn.Module):
    def __init__(self, vocab, d_model, heads, layers, seq):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(seq, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.1,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, ids):  # ids (B, T)
        x = self.embed(ids) + self.pos[: ids.shape[1]]
        return self.head(self.encoder(x, mask=self.causal, is_causal=True))  # (B, T, V)


def resnet_step(device, tiny):
    torch.manual_seed(0)
    model, name = resnet50()
    model = model.to(device).train()
    batch, image = (2, 64) if tiny else (16, 224)
    images = torch.randn(batch, 3, image, image, device=device)
    labels = torch.randint(0, 1000, (batch,), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step = torch_step_time.classifier_train_step(model, images, labels, opt)
    return step, f"{name}, batch {batch}, {image}x{image}"


def transformer_step(device, tiny):
    torch.manual_seed(0)
    vocab, seq, batch = 8000, (16 if tiny else 128), (2 if tiny else 16)
    model = TinyTransformerLm(vocab, 256, 4, 4, seq).to(device).train()
    ids = torch.randint(0, vocab, (batch, seq + 1), device=device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)

    def step():
        logits = model(ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab), ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    return step, f"transformer LM, 4 layers, d_model 256, seq {seq}, batch {batch}"


def profile_steps(step, device, path):
    """Steps under torch.profiler: 1 wait, 1 warm-up, 2 active; the trace gzipped to `path`."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    tmp = tempfile.mkdtemp()
    raw = os.path.join(tmp, "trace.json")
    with torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
            on_trace_ready=lambda prof: prof.export_chrome_trace(raw),
            record_shapes=True, with_flops=True, profile_memory=True, with_stack=True) as prof:
        for _ in range(4):
            step()
            prof.step()
    with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    with gzip.open(path, "rt") as f:
        events = len(json.load(f).get("traceEvents", []))
    shutil.rmtree(tmp)
    return events


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--tiny", action="store_true")
    a = p.parse_args()
    if a.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device (use --device cpu for the CPU-side traces)")
    os.makedirs(a.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    snapshot = a.device == "cuda"
    if snapshot:
        # Every allocation from here on, with its Python and C++ stack (the snapshot's default).
        torch.cuda.memory._record_memory_history(max_entries=200000)
    else:
        print("torch_fixtures: --device cpu: no CUDA activity and no memory snapshot",
              file=sys.stderr)
    step, what = resnet_step(a.device, a.tiny)
    path = os.path.join(a.out, "torch_resnet50_train.json.gz")
    events = profile_steps(step, a.device, path)
    print(f"{path}: {os.path.getsize(path)} bytes, {events} trace events ({what})")
    if snapshot:
        raw = os.path.join(a.out, "snapshot.pickle")
        torch.cuda.memory._dump_snapshot(raw)
        torch.cuda.memory._record_memory_history(enabled=None)
        path = os.path.join(a.out, "torch_resnet50_memory_snapshot.pickle.gz")
        with open(raw, "rb") as src, gzip.open(path, "wb", compresslevel=9) as dst:
            shutil.copyfileobj(src, dst)
        os.remove(raw)
        print(f"{path}: {os.path.getsize(path)} bytes")
    del step
    step, what = transformer_step(a.device, a.tiny)
    path = os.path.join(a.out, "torch_transformer_train.json.gz")
    events = profile_steps(step, a.device, path)
    print(f"{path}: {os.path.getsize(path)} bytes, {events} trace events ({what})")


if __name__ == "__main__":
    main()
