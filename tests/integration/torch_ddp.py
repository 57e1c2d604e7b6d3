"""torch_ddp.py: a PyTorch DistributedDataParallel client, as users bring them to a cluster
(tests/integration/torch_ddp.sh). Gloo over TCP, CPU only. With --slurm it takes its rank
and world size from SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID, as scripts launched by
`srun` do, and MASTER_ADDR / MASTER_PORT from what the batch script exported; without, from
RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT as torchrun (and gsched) set them.

Each rank trains the same small model on its own slice of one deterministic dataset for a
few SGD steps under DDP, then checks that its weights equal those of the same steps taken
without DDP over the whole dataset in one process (the all-reduced gradient is the mean of
the ranks'), and that every rank holds the same weights. Prints one line "ok rank=R world=W
local=L host=HOST master=ADDR" when all holds, else raises.
"""
import os
import socket
import sys

import torch
import torch.distributed as dist

STEPS = 5
PER_RANK = 8


def model_and_data(world):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    x = torch.randn(world * PER_RANK, 6, dtype=torch.float64)
    y = torch.randn(world * PER_RANK, 1, dtype=torch.float64)
    return model.double(), x, y


def train(model, x, y):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


def main():
    env = os.environ
    if "--slurm" in sys.argv:
        rank, world, local = int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"]), int(env["SLURM_LOCALID"])
    else:
        rank, world, local = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["LOCAL_RANK"])
    master = env["MASTER_ADDR"]
    if master.startswith("127.") or master == "localhost":
        raise SystemExit(f"rank {rank}: MASTER_ADDR={master!r} is this host's loopback")
    dist.init_process_group("gloo", init_method=f"tcp://{master}:{env['MASTER_PORT']}",
                            rank=rank, world_size=world)
    model, x, y = model_and_data(world)
    reference = [p.detach().clone() for p in model.parameters()]
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    mine = slice(rank * PER_RANK, (rank + 1) * PER_RANK)
    train(ddp, x[mine], y[mine])

    ref_model, _, _ = model_and_data(world)
    for p, r in zip(ref_model.parameters(), reference):
        assert torch.equal(p, r), "the reference starts elsewhere"
    train(ref_model, x, y)
    for p, r in zip(model.parameters(), ref_model.parameters()):
        assert torch.allclose(p, r, rtol=0, atol=1e-12), f"rank {rank}: {p} != {r}"
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(g, flat) for g in gathered), f"rank {rank}: ranks differ"
    dist.destroy_process_group()
    print(f"ok rank={rank} world={world} local={local} host={socket.gethostname()} "
          f"master={master}", flush=True)


if __name__ == "__main__":
    main()
