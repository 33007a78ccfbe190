# Real PyTorch profiler traces (CPU, record_shapes=True, with_flops=True) for the op cost model's
# tests: PyTorch's own flop counts (with_flops; written beside each trace as
# <trace>.torch_flops.json, since its chrome export leaves them out) are the oracle our per-op FLOPs are compared
# with. One training step each of ResNet-50 (written out here, torchvision's layout, so nothing
# but torch is needed), a two-layer LSTM language model and a small transformer whose attention
# is F.scaled_dot_product_attention. Run with torch installed: python3 make_pytorch_flops_traces.py
import gzip, json, os, shutil
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import profile, ProfilerActivity


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for b in range(blocks):
                layers.append(Bottleneck(cin, width, stride if b == 0 else 1))
                cin = width * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads, self.qkv, self.out = heads, nn.Linear(d, 3 * d), nn.Linear(d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


class Transformer(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, layers=2, t=32):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(t, d))
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({"ln1": nn.LayerNorm(d), "attn": Attention(d, heads),
                                              "ln2": nn.LayerNorm(d), "fc1": nn.Linear(d, 4 * d),
                                              "fc2": nn.Linear(4 * d, d)}))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx) + self.pos
        for blk in self.blocks:
            x = x + blk["attn"](blk["ln1"](x))
            x = x + blk["fc2"](F.gelu(blk["fc1"](blk["ln2"](x))))
        return self.head(self.ln(x))


class LstmLm(nn.Module):
    def __init__(self, vocab=200, hidden=64, layers=2):
        super().__init__()
        self.emb, self.lstm = nn.Embedding(vocab, hidden), nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx):
        return self.head(self.lstm(self.emb(idx))[0])


def record(model, x, target, out, loss_fn):
    torch.manual_seed(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn(model(x), target).backward()  # warm up: the profiled step is a steady one
    opt.step(); opt.zero_grad()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_flops=True) as prof:
        loss = loss_fn(model(x), target)
        loss.backward()
        opt.step()
        opt.zero_grad()
    prof.export_chrome_trace(out)
    # PyTorch's own counts (the chrome trace does not carry them): per op name, the flops of each
    # of its events in start order, the oracle the tests compare ours with.
    counted = {}
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        if e.flops:
            counted.setdefault(e.name, []).append(e.flops)
    with open(out.replace(".json", ".torch_flops.json"), "w") as f:
        json.dump({"torch": torch.__version__, "flops": counted}, f, indent=1, sort_keys=True)
    with open(out, "rb") as i, gzip.open(out + ".gz", "wb", compresslevel=9) as o:
        shutil.copyfileobj(i, o)
    os.remove(out)


def lm_loss(logits, target):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(2)
    record(ResNet50(), torch.randn(1, 3, 224, 224), torch.tensor([3]), "pytorch_resnet50_b1_train.json",
           F.cross_entropy)
    record(LstmLm(), torch.randint(0, 200, (4, 16)), torch.randint(0, 200, (4, 16)), "pytorch_lstm_train.json",
           lm_loss)
    record(Transformer(), torch.randint(0, 256, (2, 32)), torch.randint(0, 256, (2, 32)),
           "pytorch_transformer_train.json", lm_loss)
