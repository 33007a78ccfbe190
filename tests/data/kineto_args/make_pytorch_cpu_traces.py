# Real PyTorch profiler traces (CPU) for stepscope's tests: a tiny model recorded with
# record_shapes and with_stack, and two gloo processes doing an all_reduce.
import gzip, os, shutil, sys
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity

def tiny(out):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 16)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        for _ in range(2):
            loss = model(x).sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
    prof.export_chrome_trace(out)

def worker(rank, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29517"
    dist.init_process_group("gloo", rank=rank, world_size=2)
    t = torch.ones(256) * (rank + 1)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        dist.all_reduce(t)
        dist.all_reduce(t)
    if rank == 0:
        prof.export_chrome_trace(out)
    dist.destroy_process_group()

if __name__ == "__main__":
    tiny("pytorch_cpu_tiny_stack.json")
    mp.spawn(worker, args=("pytorch_cpu_gloo_allreduce_rank0.json",), nprocs=2)
    for f in ["pytorch_cpu_tiny_stack.json", "pytorch_cpu_gloo_allreduce_rank0.json"]:
        with open(f, "rb") as i, gzip.open(f + ".gz", "wb", compresslevel=9) as o:
            shutil.copyfileobj(i, o)
