#!/usr/bin/env python3
"""PyTorch replica of stepscope-train's ResNet (Keras' ResNet v1), trained from our own initial
variables on our own batches, to tell the model's behaviour from a bug in the trainer.

    build/cpu-only/tests/trainer/trainer_resnet_dump /tmp/rn --image_size 32 --batch_size 2 --steps 20
    python3 scripts/oracles/resnet_small_torch.py /tmp/rn [--dtype float64] [--lr LR] [--json]

The dump (tests/trainer/resnet_dump.cc) holds every variable as our model initialised it, the
batches the trainer's image source serves, and our losses; this script builds the same network
(conv1_pad 3 -> 7x7/2 VALID -> BN -> ReLU -> pad 1 -> 3x3/2 max pool -> bottleneck stages with
the stride on the first 1x1 convolutions, convolutions with biases, BatchNorm eps 1.001e-5,
running-statistics momentum 0.01 in PyTorch's convention, global mean, dense, mean softmax cross
entropy), copies the variables in, and trains with the trainer's update: momentum 0.9 with the
raw gradient sum in the slot, weight decay 1e-4 added to kernel gradients, biases at twice the
learning rate without decay, BatchNorm parameters at the learning rate without decay.

Prints per step PyTorch's loss next to ours. An oracle for people, never run by CI or tests
(PyTorch is not a dependency of stepscope).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

BLOCKS = {14: [1, 1, 1, 1], 26: [2, 2, 2, 2], 38: [3, 3, 3, 3], 50: [3, 4, 6, 3],
          101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}
EPS = 1.001e-5
BN_MOMENTUM = 0.01  # Keras' 0.99 as PyTorch counts it


def load(dump_dir, dtype):
    with open(os.path.join(dump_dir, "manifest.json")) as f:
        manifest = json.load(f)
    flat = np.fromfile(os.path.join(dump_dir, "variables.f32"), dtype="<f4")
    variables = {}
    for v in manifest["variables"]:
        n = int(np.prod(v["shape"])) if v["shape"] else 1
        a = flat[v["offset"]:v["offset"] + n].reshape(v["shape"])
        variables[v["name"]] = (torch.tensor(a, dtype=dtype), v["role"])
    images = np.fromfile(os.path.join(dump_dir, "images.f32"), dtype="<f4")
    labels = np.fromfile(os.path.join(dump_dir, "labels.i32"), dtype="<i4")
    b, s = manifest["batch_size"], manifest["image_size"]
    batches = []
    for step in manifest["steps"]:
        x = images[step["images_offset"]:step["images_offset"] + b * s * s * 3].reshape(b, s, s, 3)
        y = labels[step["labels_offset"]:step["labels_offset"] + b]
        batches.append((torch.tensor(x, dtype=dtype).permute(0, 3, 1, 2).contiguous(),
                        torch.tensor(y, dtype=torch.int64)))
    return manifest, variables, batches


class Net:
    """The network as functions of named parameters (PyTorch layouts), BN statistics as buffers."""

    def __init__(self, depth, variables):
        self.params, self.roles, self.buffers = {}, {}, {}
        for name, (value, role) in variables.items():
            if "/moving_" in name:
                self.buffers[name] = value.clone()
                continue
            if name.endswith("_conv/kernel"):
                value = value.permute(3, 2, 0, 1)  # HWIO -> OIHW
            elif name == "predictions/kernel":
                value = value.t()  # (in, out) -> (out, in)
            self.params[name] = value.clone().contiguous().requires_grad_(True)
            self.roles[name] = role
        self.layout = []  # (block name, has shortcut, stride)
        for stage, count in enumerate(BLOCKS[depth]):
            for i in range(count):
                stride = 2 if (i == 0 and stage > 0) else 1
                self.layout.append((f"conv{stage + 2}_block{i + 1}", i == 0, stride))

    def conv_bn(self, x, name, stride=1, padding=0):
        p = self.params
        x = F.conv2d(x, p[name + "_conv/kernel"], p[name + "_conv/bias"], stride, padding)
        return F.batch_norm(x, self.buffers[name + "_bn/moving_mean"],
                            self.buffers[name + "_bn/moving_variance"], p[name + "_bn/gamma"],
                            p[name + "_bn/beta"], training=True, momentum=BN_MOMENTUM, eps=EPS)

    def __call__(self, x):
        x = F.pad(x, (3, 3, 3, 3))
        x = F.relu(self.conv_bn(x, "conv1", stride=2))
        x = F.max_pool2d(F.pad(x, (1, 1, 1, 1)), 3, 2)
        for name, has_shortcut, stride in self.layout:
            shortcut = self.conv_bn(x, name + "_0", stride) if has_shortcut else x
            y = F.relu(self.conv_bn(x, name + "_1", stride))
            y = F.relu(self.conv_bn(y, name + "_2", 1, padding=1))
            y = self.conv_bn(y, name + "_3")
            x = F.relu(shortcut + y)
        x = x.mean(dim=(2, 3))
        return F.linear(x, self.params["predictions/kernel"], self.params["predictions/bias"])


def train(net, batches, lr, momentum=0.9, weight_decay=1e-4):
    slots = {n: torch.zeros_like(p) for n, p in net.params.items()}
    losses = []
    for x, y in batches:
        logits = net(x)
        loss = F.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, list(net.params.values()))
        losses.append((loss.item(), int((logits.argmax(1) == y).sum())))
        with torch.no_grad():
            for (name, p), g in zip(net.params.items(), grads):
                role = net.roles[name]
                if role == "weight":
                    g = g + weight_decay * p
                slots[name].mul_(momentum).add_(g)
                p.sub_((2 * lr if role == "bias" else lr) * slots[name])
    return losses


def to_ours(name, grad):
    """A gradient in our variable's layout (HWIO kernels, (in, out) dense)."""
    if name.endswith("_conv/kernel"):
        return grad.permute(2, 3, 1, 0)
    if name == "predictions/kernel":
        return grad.t()
    return grad


def compare_gradients(dump_dir, manifest, net, batch):
    """First-step gradients, ours against PyTorch's: per variable the relative L2 error."""
    flat = np.fromfile(os.path.join(dump_dir, "gradients.f32"), dtype="<f4")
    x, y = batch
    loss = F.cross_entropy(net(x), y)
    grads = dict(zip(net.params, torch.autograd.grad(loss, list(net.params.values()))))
    rows = []
    for v in manifest["variables"]:
        if v["name"] not in grads:
            continue
        n = int(np.prod(v["shape"]))
        ours = flat[v["offset"]:v["offset"] + n].reshape(v["shape"]).astype(np.float64)
        theirs = to_ours(v["name"], grads[v["name"]]).detach().double().numpy()
        norm = np.linalg.norm(theirs)
        rows.append((np.linalg.norm(ours - theirs) / max(norm, 1e-30), norm, v["name"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dump_dir")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--lr", type=float, help="learning rate (default: the dump's, the trainer's)")
    ap.add_argument("--json", action="store_true", help="print the losses as JSON")
    ap.add_argument("--gradients", action="store_true",
                    help="compare the first step's gradients instead of training")
    ap.add_argument("--fixture", action="store_true",
                    help="print the first step's loss and per-variable gradient L2 norms as JSON "
                         "(tests/data/trainer/resnet50_first_step_torch.json)")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    dtype = getattr(torch, args.dtype)
    manifest, variables, batches = load(args.dump_dir, dtype)
    lr = args.lr if args.lr is not None else manifest["learning_rate"]
    net = Net(manifest["depth"], variables)
    if args.fixture:
        x, y = batches[0]
        loss = F.cross_entropy(net(x), y)
        grads = torch.autograd.grad(loss, list(net.params.values()))
        json.dump({"made_by": "scripts/oracles/resnet_small_torch.py DUMP --dtype " + args.dtype +
                   " --fixture, DUMP from: trainer_resnet_dump DUMP " +
                   manifest["command"].split("resnet50 ", 1)[1] + " --steps 1",
                   "torch": torch.__version__, "dtype": args.dtype, "loss": loss.item(),
                   "gradient_l2": {n: g.double().norm().item() for n, g in zip(net.params, grads)
                                   if not n.endswith("_conv/bias")}}, sys.stdout, indent=1)
        print()
        return
    if args.gradients:
        rows = compare_gradients(args.dump_dir, manifest, net, batches[0])
        print("relative L2 error  PyTorch L2 norm  variable")
        for err, norm, name in rows:
            print(f"{err:17.2e}  {norm:15.6g}  {name}")
        worst = max(rows)
        print(f"# worst: {worst[2]} {worst[0]:.2e}; median "
              f"{sorted(r[0] for r in rows)[len(rows) // 2]:.2e}")
        return
    losses = train(net, batches, lr)
    ours = [s["loss"] for s in manifest["steps"]]
    if args.json:
        json.dump({"command": manifest["command"], "learning_rate": lr, "dtype": args.dtype,
                   "torch": torch.__version__, "losses": [l for l, _ in losses],
                   "correct": [c for _, c in losses], "stepscope_losses": ours}, sys.stdout,
                  indent=1)
        print()
        return
    print(f"# {manifest['command']}, learning rate {lr:g}, PyTorch {torch.__version__} "
          f"{args.dtype}")
    print("step  pytorch loss  stepscope loss  rel. difference")
    for i, (loss, _) in enumerate(losses):
        mine = ours[i] if i < len(ours) and args.lr is None else float("nan")
        print(f"{i + 1:4d}  {loss:12.6f}  {mine:14.6f}  {abs(loss - mine) / abs(loss):.2e}")


if __name__ == "__main__":
    main()
