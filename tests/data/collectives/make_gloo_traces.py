# Real PyTorch profiler traces (CPU, gloo backend) of collectives for stepscope's bus bandwidth
# tests: two processes, each profiling a few collectives of known sizes with record_shapes; one
# all-reduce is asynchronous, with a matrix multiply running while it is in flight.
import gzip, os, shutil
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity

WORLD = 2

def worker(rank):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = "29533"
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    torch.manual_seed(rank)
    big = torch.ones(1 << 20) * (rank + 1)           # 4 MiB of float32
    small = torch.ones(4096, dtype=torch.float64)     # 32 KiB of float64
    gathered = torch.empty(WORLD * 65536)             # 256 KiB gathered, 128 KiB each
    scattered = torch.empty(65536)
    a = torch.randn(512, 512)
    dist.barrier()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            dist.all_reduce(big)
        dist.all_reduce(small)
        dist.broadcast(big, src=0)
        dist.all_gather_into_tensor(gathered, torch.ones(65536))
        dist.reduce_scatter_tensor(scattered, torch.ones(WORLD * 65536))
        work = dist.all_reduce(big, async_op=True)
        for _ in range(4):
            a = torch.tanh(a @ a)
        work.wait()
    out = f"gloo_collectives_rank{rank}.json"
    prof.export_chrome_trace(out)
    with open(out, "rb") as i, gzip.open(out + ".gz", "wb", compresslevel=9) as o:
        shutil.copyfileobj(i, o)
    os.remove(out)
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(worker, nprocs=WORLD)
