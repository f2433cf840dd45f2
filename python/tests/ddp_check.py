#!/usr/bin/python3
"""Checks of serene.Client and serene.torch.comm_hook against a running switch (PytorchAgentSystemTest runs them).

    ddp_check.py bsp --steps 50         2 ranks, DDP through the hook under BSP: every bucket within the quantization
                                        bound of gloo's average of the same gradients, the models equal bitwise at the end
    ddp_check.py excluded --steps 20    2 ranks, rank 1 (0.2 s late every step) excluded by the switch's config (start it
                                        with --sync bsp+exclude:1+drop): rank 0 goes on, the rounds count it alone, both
                                        ranks end with the same model
    ddp_check.py bad                    bad input: no switch, another dtype or size, a round out of order, a rank joining
                                        twice, an agent that dies mid-round: each a SereneError, none a hang

Needs SERENE_SWITCH (the switch) and SERENE_AGENT_COMMAND (how to start `serene`). Prints one JSON line; exits 1 on a failed check.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

import serene  # noqa: E402
import serene.torch  # noqa: E402


def model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))


def digest(module):
    h = hashlib.sha256()
    for p in module.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.rand(32, 784, generator=g), torch.randint(0, 10, (32,), generator=g)


def rank_main(mode, steps, store, job):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", store=dist.FileStore(store, world), rank=rank, world_size=world)
    net = DDP(model(1), bucket_cap_mb=1)  # two buckets (the first layer alone is 1.6 MB): two rounds a step
    state = serene.torch.HookState.for_module(net, job=job, timeout=60)
    excess = []

    def checked(state, bucket):
        exact = bucket.buffer().clone()
        dist.all_reduce(exact)
        exact /= world
        future = serene.torch.comm_hook(state, bucket)
        got = future.value()
        tol = float(exact.abs().max()) * 2.0 ** -20 + 1e-12
        excess.append(float((got - exact).abs().max()) / tol)
        return future

    net.register_comm_hook(state, checked if mode == "bsp" else serene.torch.comm_hook)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    contributors = set()
    start = time.monotonic()
    for step in range(steps):
        x, y = batch(rank, step)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x), y)
        if mode == "excluded" and rank == 1:
            # always late, also after DDP's forward, which waits for every rank once (its buckets rebuilt in the second step)
            time.sleep(0.2)
        loss.backward()
        opt.step()
        contributors.update(state.contributors)
    seconds = time.monotonic() - start
    hashes = [None] * world
    dist.all_gather_object(hashes, digest(net.module))
    result = {"rank": rank, "rounds": state.rounds, "hashes": hashes, "contributors": sorted(contributors),
              "maxExcess": max(excess) if excess else None,
              "seconds": seconds, "config": state.client.config()}
    state.close()
    print(json.dumps(result), flush=True)


def launch(mode, steps):
    """Runs 2 ranks as torchrun would (RANK, WORLD_SIZE), each a process of this script."""
    store = tempfile.mktemp(prefix="serene-store-")
    job = 11 if mode == "bsp" else 12
    procs = [subprocess.Popen([sys.executable, __file__, "rank", mode, "--steps", str(steps), "--store", store, "--job", str(job)],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2"), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for r in range(2)]
    results, failures = [], []
    for p in procs:
        out, err = p.communicate(timeout=300)
        if p.returncode != 0:
            failures.append(err.decode()[-2000:])
        else:
            results.append(json.loads(out.decode().strip().splitlines()[-1]))
    if failures:
        return {"ok": False, "why": failures}
    hashes = results[0]["hashes"]
    checks = {"same model on every rank": len(set(hashes)) == 1,
              "rounds agree": results[0]["rounds"] == results[1]["rounds"] and results[0]["rounds"] >= steps}
    if mode == "bsp":
        checks["every bucket within the bound of gloo's average"] = max(r["maxExcess"] for r in results) <= 1.0
        checks["every round counts both ranks"] = all(r["contributors"] == [2] for r in results)
    else:
        checks["every round counts rank 0 alone"] = all(r["contributors"] == [1] for r in results)
        checks["rank 0 does not wait for rank 1"] = results[0]["seconds"] < 0.5 * results[1]["seconds"]
    return {"ok": all(checks.values()), "checks": checks, "results": results}


def expect_error(what, words, call, seconds):
    start = time.monotonic()
    try:
        call()
    except serene.SereneError as e:
        took = time.monotonic() - start
        return {"case": what, "ok": words in str(e) and took <= seconds, "message": str(e), "seconds": round(took, 2)}
    return {"case": what, "ok": False, "message": "no SereneError"}


def bad():
    cases = []
    cases.append(expect_error("no switch", "did not answer JOIN", lambda: serene.Client(
        16, rank=0, world_size=1, job=21, switch="127.0.0.1:9", timeout=12), 20))
    with serene.Client(16, rank=0, world_size=1, job=22, timeout=30) as c:
        c.allreduce(0, torch.ones(16))
        cases.append(expect_error("another dtype", "rounds before carried", lambda: c.allreduce(1, torch.ones(16, dtype=torch.float64)), 5))
        cases.append(expect_error("another size", "the round before carried 16", lambda: c.allreduce(1, torch.ones(8)), 5))
        cases.append(expect_error("integers", "floating-point", lambda: c.allreduce(1, torch.ones(16, dtype=torch.int32)), 5))
        cases.append(expect_error("too large", "at most 16", lambda: c.allreduce(1, torch.ones(17)), 5))
        cases.append(expect_error("a rank joining twice", "a rank joins once", lambda: serene.Client(
            16, rank=0, world_size=1, job=22, timeout=30), 10))
        cases.append(expect_error("a round out of order", "out of order", lambda: c.allreduce(5, torch.ones(16)), 5))
    # job 23 waits for a rank 1 that never comes; the agent is killed while rank 0 waits for its round
    c = serene.Client(16, rank=0, world_size=2, job=23, timeout=60)
    killer = threading.Timer(1.0, c.agent.kill)
    killer.start()
    cases.append(expect_error("the agent dies mid-round", "went away", lambda: c.allreduce(0, torch.ones(16)), 5))
    return {"ok": all(x["ok"] for x in cases), "cases": cases}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["bsp", "excluded", "bad", "rank"])
    ap.add_argument("mode", nargs="?")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--store")
    ap.add_argument("--job", type=int)
    a = ap.parse_args()
    if a.what == "rank":
        rank_main(a.mode, a.steps, a.store, a.job)
        return
    result = bad() if a.what == "bad" else launch(a.what, a.steps)
    print(json.dumps(result), flush=True)
    sys.exit(0 if result["ok"] else 1)


if __name__ == "__main__":
    main()
