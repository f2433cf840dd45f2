#!/usr/bin/python3
"""PyTorch gloo allreduce, the baseline of `serene bench allreduce --baseline gloo`.

N processes on 127.0.0.1, one thread each, allreduce (sum) a float32 tensor of E elements R times
after W warm-up rounds, every process's result checked exactly against the known sum (the inputs are
small integers, so a float32 sum is exact). Rank 0 prints one JSON line: elementsPerSecond
(E * R / the measured seconds, as serene bench counts it), seconds, exact, and cpuSecondsPerRound
(the processor time all ranks spent in the measured all_reduce calls, every thread of each process
counted, per round).

Needs Debian's python3-torch (apt-get install python3-torch); run with /usr/bin/python3.
"""
import argparse
import os
import sys
import time

import ranks


def worker(rank, args, port, queue):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    index = torch.arange(args.elements, dtype=torch.int64)
    # small integers: every partial sum is exact in float32
    source = ((index * 7 + rank * 13 + args.seed) % 17 - 8).to(torch.float32)
    expected = torch.zeros(args.elements, dtype=torch.float32)
    for r in range(args.workers):
        expected += ((index * 7 + r * 13 + args.seed) % 17 - 8).to(torch.float32)
    tensor = source.clone()
    exact = True
    for _ in range(args.warmup):
        tensor.copy_(source)
        dist.all_reduce(tensor)
    dist.barrier()
    measured = 0.0
    cpu = 0.0
    for _ in range(args.rounds):
        tensor.copy_(source)
        dist.barrier()
        start = time.perf_counter()
        cpu_start = time.process_time()
        dist.all_reduce(tensor)
        measured += time.perf_counter() - start
        cpu += time.process_time() - cpu_start
        exact = exact and bool(torch.equal(tensor, expected))
    # the slowest rank's time is the round's
    times = torch.tensor([measured, 0.0 if exact else 1.0], dtype=torch.float64)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    cpu_sum = torch.tensor([cpu], dtype=torch.float64)
    dist.all_reduce(cpu_sum)
    if rank == 0:
        queue.put({"baseline": "gloo", "workers": args.workers, "elements": args.elements, "rounds": args.rounds,
                   "seconds": times[0].item(), "exact": times[1].item() == 0.0,
                   "elementsPerSecond": args.elements * args.rounds / times[0].item(),
                   "cpuSecondsPerRound": cpu_sum.item() / args.rounds})
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--elements", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.workers < 1 or args.elements < 1 or args.rounds < 1 or args.warmup < 0:
        sys.exit("allreduce.py: --workers, --elements and --rounds must be positive, --warmup >= 0")
    ranks.run("allreduce.py", worker, args, args.workers)

if __name__ == "__main__":
    main()
