#!/usr/bin/python3
"""PyTorch DDP (gloo), the baseline of `policies: [ddp]` in `serene experiment` (train mode).

What users would run instead of Serene: N processes on 127.0.0.1, one thread each, the same MLP
(784-128-10, ReLU, Serene's initialization), SGD with the same learning rate and momentum, and the
batches and step times Serene's own workers would have, read from a plan file serene writes
(DdpBaseline.java): for each worker and round the indexes of its batch in the training set (its
shard, in its seeded order) and the modelled step time (the modelled device's step times the
straggler factor, plus any pause). A worker's step lasts its modelled time: the forward and backward
pass run inside it, and DDP's communication hook waits out the rest before it allreduces (the
gradient averaged over the workers, as DDP does), so stragglers cost DDP what they cost it on a
cluster. Rank 0 keeps a copy of the model every --eval-every rounds and at the end, with the time
it held it, and evaluates them on the test set after training (outside the measured time). It
prints one JSON line: the accuracy curve, the final accuracy and loss, the job time, the steps and
how many overran their modelled time.

With --comm serene (the experiment row `ddp-hook:CONFIG`) DDP's buckets go through Serene's switch
instead, by python/serene's communication hook, under the switch's config; a round the switch
released without a rank is not waited out by it (as Serene's workers skip such a round).

Needs Debian's python3-torch (apt-get install python3-torch); run with /usr/bin/python3.
"""
import argparse
import gzip
import math
import os
import shlex
import struct
import sys
import time

import ranks

CLASSES = 10
PIXELS = 784


def idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    found, n = struct.unpack(">II", data[:8])
    if found != magic:
        raise SystemExit("%s: not an IDX file of this kind (magic %x)" % (path, found))
    return data, n


def load_split(data_dir, prefix):
    import torch
    images, n = idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"), 0x803)
    labels, m = idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"), 0x801)
    if n != m:
        raise SystemExit("%s: %d images but %d labels" % (data_dir, n, m))
    x = torch.frombuffer(bytearray(images[16:16 + n * PIXELS]), dtype=torch.uint8).reshape(n, PIXELS).float() / 255.0
    y = torch.frombuffer(bytearray(labels[8:8 + n]), dtype=torch.uint8).long()
    return x, y


def mlp(torch, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(PIXELS, 128), torch.nn.ReLU(), torch.nn.Linear(128, CLASSES))
    for layer in (model[0], model[2]):
        # Serene's (DJL's) Xavier: uniform in +-sqrt(6 / ((fan in + fan out) / 2)), biases zero
        bound = math.sqrt(12.0 / (layer.in_features + layer.out_features))
        torch.nn.init.uniform_(layer.weight, -bound, bound)
        torch.nn.init.zeros_(layer.bias)
    return model


def worker(rank, args, port, queue):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.workers)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import serene.run
    import serene.torch
    workers, indexes, step_seconds = serene.run.read_plan(args.plan, rank)
    rounds, batch = indexes.shape
    x, y = load_split(args.data, "train")
    mine = torch.from_numpy(indexes.astype("int64"))
    # every rank starts from the same model (DDP also broadcasts rank 0's)
    model = DistributedDataParallel(mlp(torch, args.seed))
    if args.comm == "serene":
        hook_state = serene.torch.HookState.for_module(model, rank=rank, world_size=args.workers, job=args.job, switch=args.switch,
                                                       agent_command=shlex.split(args.agent_command), timeout=300)
        step = serene.torch.ModelledStep(serene.torch.comm_hook, hook_state)
    else:
        hook_state = None

        def gloo_allreduce(_, bucket):
            return dist.all_reduce(bucket.buffer().div_(workers), async_op=True).get_future()
        step = serene.torch.ModelledStep(gloo_allreduce)
    # every step lasts its modelled time: the pass runs inside it, DDP's reduction follows
    model.register_comm_hook(hook_state, step)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    loss_fn = torch.nn.CrossEntropyLoss()
    copies = []
    dist.barrier()
    start = time.perf_counter()
    loss = None
    for r in range(rounds):
        step.begin(step_seconds[r])
        batch_x = x[mine[r]]
        batch_y = y[mine[r]]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(batch_x), batch_y)
        loss.backward()
        optimizer.step()
        if rank == 0 and ((r + 1) % args.eval_every == 0 or r == rounds - 1):
            copies.append((r, time.perf_counter() - start, [p.detach().clone() for p in model.module.parameters()]))
    jct = time.perf_counter() - start
    if hook_state is not None:
        hook_state.close()
    counts = torch.tensor([step.overran, step.waited, step.skipped], dtype=torch.float64)
    dist.all_reduce(counts)
    if rank == 0:
        tx, ty = load_split(args.data, "t10k")
        evaluated = mlp(torch, args.seed)
        curve = []
        with torch.no_grad():
            for r, seconds, params in copies:
                for p, v in zip(evaluated.parameters(), params):
                    p.copy_(v)
                accuracy = (evaluated(tx).argmax(dim=1) == ty).float().mean().item()
                curve.append({"round": r, "seconds": seconds, "accuracy": accuracy})
        queue.put({"workers": workers, "rounds": rounds, "batch": batch, "jctSeconds": jct, "accuracyCurve": curve,
                   "finalAccuracy": curve[-1]["accuracy"], "finalLoss": float(loss.item()), "steps": workers * rounds,
                   "overrunSteps": int(counts[0].item()), "communicationSeconds": float(counts[1].item()),
                   "skippedSteps": int(counts[2].item()),
                   "torch": torch.__version__})
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--plan", required=True, help="the plan file serene wrote (batches and step times)")
    parser.add_argument("--data", required=True, help="the Fashion-MNIST directory (the four .gz files)")
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--momentum", type=float, required=True)
    parser.add_argument("--eval-every", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--workers", type=int, required=True)
    parser.add_argument("--comm", choices=["gloo", "serene"], default="gloo",
                        help="gloo: DDP's allreduce; serene: DDP's buckets through Serene's switch (python/serene's hook)")
    parser.add_argument("--switch", help="with --comm serene: the switch, HOST:PORT")
    parser.add_argument("--job", type=int, default=1, help="with --comm serene: the job id")
    parser.add_argument("--agent-command", help="with --comm serene: how to start `serene` (its agent command is appended)")
    args = parser.parse_args()
    if args.comm == "serene" and not (args.switch and args.agent_command):
        parser.error("--comm serene needs --switch and --agent-command")
    ranks.run("ddp.py", worker, args, args.workers)

if __name__ == "__main__":
    main()
