import os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.profiler import profile, ProfilerActivity, schedule

def run(rank, world, out):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "29531"
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sub = dist.new_group([0, 1]) if world > 2 else None
    def step():
        x = torch.randn(64, 256); y = torch.randint(0, 10, (64,))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        if sub is not None and rank < 2:
            dist.all_reduce(torch.ones(1000), group=sub)
        dist.broadcast(torch.zeros(100), src=0)
        opt.step()
    with profile(activities=[ProfilerActivity.CPU], schedule=schedule(wait=1, warmup=1, active=5, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(os.path.join(out, f"rank{rank}.json")),
                 record_shapes=True) as prof:
        for _ in range(8):
            step(); prof.step()
    dist.destroy_process_group()

if __name__ == "__main__":
    world = int(sys.argv[1]); out = sys.argv[2]; os.makedirs(out, exist_ok=True)
    mp.spawn(run, args=(world, out), nprocs=world)
