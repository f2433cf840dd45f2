#!/usr/bin/python3
"""Train a torchvision model on Fashion-MNIST with PyTorch DDP, its gradients summed in Serene's switch.

A researcher's script: torchvision's ResNet-18 with its first layer taking 28x28 grey images (or a
small MLP: --model mlp), DistributedDataParallel with Serene's communication hook
(python/serene; docs/pytorch.md) in a modelled accelerator (every step lasts --step-time, the real
pass inside it). Run it with torchrun against a running switch:

    ./serene switch --sync 'bsp+exclude:3+drop' &
    SERENE_AGENT_COMMAND=$PWD/serene torchrun --redirects 1 --tee 1 --nproc_per_node 4 examples/pytorch/train.py --model mlp --rounds 100

(Debian's torchrun 1.13 on Python 3.11 needs --redirects and --tee other than 0.)

or let Serene launch it, with its switch, policies, straggler profiles and run files (records.jsonl,
summary.json, the report of `serene experiment`):

    ./serene train --pytorch 'examples/pytorch/train.py --model mlp' --workers 4 --step-time 80ms \\
        --stragglers persistent:3:x4 --policy 'bsp+exclude:3+drop' --rounds 200
    ./serene train --pytorch examples/pytorch/train.py --workers 4 --step-time 1s --link shm --rounds 60   # ResNet-18

(ResNet-18's 11M parameters a round: 1.2 s a round over shared memory on one host, 5.5-6.0 s over UDP
with PyTorch on the same two cores: docs/notes/tail-loss-2026-12-07.md.)

Needs Debian's python3-torch and python3-torchvision (/usr/bin/python3).
"""
import argparse
import gzip
import hashlib
import os
import struct
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import serene.run  # noqa: E402
import serene.torch  # noqa: E402

DEBIAN_DATA = "/usr/share/datasets/fashion-mnist"


def load(data, split):
    """Fashion-MNIST's images (N x 1 x 28 x 28, in [0, 1]) and labels from the IDX files."""
    def idx(name, magic):
        with gzip.open(os.path.join(data, name), "rb") as f:
            raw = f.read()
        found, n = struct.unpack(">II", raw[:8])
        if found != magic:
            raise SystemExit("%s: not an IDX file of this kind" % name)
        return raw, n
    images, n = idx(split + "-images-idx3-ubyte.gz", 0x803)
    labels, _ = idx(split + "-labels-idx1-ubyte.gz", 0x801)
    x = torch.frombuffer(bytearray(images[16:16 + n * 784]), dtype=torch.uint8).reshape(n, 1, 28, 28).float() / 255.0
    y = torch.frombuffer(bytearray(labels[8:8 + n]), dtype=torch.uint8).long()
    return x, y


def build(name, seed):
    torch.manual_seed(seed)
    if name == "mlp":
        return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    # 28x28 grey images: one input channel, a 3x3 first convolution (7x7 maps after it and the max pool)
    model.conv1 = torch.nn.Conv2d(1, 64, kernel_size=3, stride=2, padding=1, bias=False)
    return model


def digest(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    launched = serene.run.Launched.here()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=["resnet18", "mlp"], default="resnet18")
    ap.add_argument("--data", default=DEBIAN_DATA, help="the Fashion-MNIST directory. Default: Debian's")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--step-time", type=float, default=0.0, help="seconds a step takes on the modelled accelerator (0: the host's)")
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-images", type=int, default=2000, help="test images an evaluation uses (the first ones)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if launched:
        args.rounds, args.batch, args.lr, args.momentum = launched.rounds, launched.batch, launched.lr, launched.momentum
        args.eval_every, args.seed, args.data = launched.eval_every, launched.seed, launched.data
    torch.set_num_threads(1)
    dist.init_process_group("gloo")  # torchrun's or serene's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = load(args.data, "train")
    if launched:
        batches, steps = torch.from_numpy(launched.indexes.astype("int64")), launched.step_seconds.tolist()
    else:
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(args.seed))[rank::world]
        need = args.rounds * args.batch
        batches = order.repeat((need + len(order) - 1) // len(order))[:need].reshape(args.rounds, args.batch)
        steps = [args.step_time] * args.rounds
    model = DistributedDataParallel(build(args.model, args.seed))
    hook = serene.torch.HookState.for_module(model)
    step = serene.torch.ModelledStep(serene.torch.comm_hook, hook)
    model.register_comm_hook(hook, step)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    now = launched.now if launched else time.time
    if launched:
        launched.joined()
    records, copies = [], []
    start = now()
    base = launched.step_seconds_base if launched else args.step_time
    for r in range(args.rounds):
        began = now()
        step.begin(steps[r])
        waited = step.waited
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x[batches[r]]), y[batches[r]])
        loss.backward()
        optimizer.step()
        epoch = time.time() - now()
        # a step not waited out (its round released without this rank) took the real pass only
        compute, injected = (step.host, 0.0) if step.skipped_this else (base, steps[r] - base)
        records.append({"worker": rank, "round": r, "startSeconds": began, "computeSeconds": compute, "injectedSeconds": injected,
                        "waitingSeconds": step.waited - waited, "staleness": 0, "batch": args.batch,
                        "sendSeconds": step.sent - epoch, "releaseSeconds": step.reduced - epoch, "skipped": False,
                        "dropped": step.skipped_this or hook.client.skipped, "loss": loss.item(), "accuracy": None, "evaluatedSeconds": None,
                        "hostComputeSeconds": step.host})
        if launched:
            launched.round_done(r, loss.item())
        if (r + 1) % args.eval_every == 0 or r == args.rounds - 1:
            copies.append((r, now(), {k: v.clone() for k, v in model.module.state_dict().items()}))
    end = now()
    hook.close()
    if launched:
        launched.trained()
    tx, ty = load(args.data, "t10k")
    tx, ty = tx[:args.eval_images], ty[:args.eval_images]
    evaluated = build(args.model, args.seed)
    accuracy = None
    for r, held, state in copies:
        evaluated.load_state_dict(state)
        evaluated.eval()

        def evaluate():
            with torch.no_grad():
                return sum((evaluated(tx[i:i + 500]).argmax(1) == ty[i:i + 500]).sum().item() for i in range(0, len(tx), 500)) / len(tx)
        accuracy = launched.share_evaluation(digest(evaluated), evaluate) if launched else evaluate()
        records[r]["accuracy"], records[r]["evaluatedSeconds"] = accuracy, held
        if rank == 0:
            print("worker 0 round %d accuracy %.4f" % (r, accuracy), flush=True)
    final_hash = digest(model.module)
    if launched:
        launched.finish(records, {
            "worker": rank, "rounds": args.rounds, "seconds": end - start, "startSeconds": start, "endSeconds": end,
            "computeSeconds": sum(x["computeSeconds"] for x in records), "injectedSeconds": sum(x["injectedSeconds"] for x in records),
            "skippedRounds": 0,
            "droppedRounds": step.skipped, "samples": args.batch * args.rounds, "rebalance": False, "waitingSeconds": step.waited,
            "evaluationSeconds": 0.0, "deferredEvaluation": True, "stragglers": launched.stragglers, "finalLoss": records[-1]["loss"],
            "finalAccuracy": accuracy, "modelHash": final_hash, "seed": args.seed,
            "device": {"steps": args.rounds, "overrunSteps": step.overran, "overrunSeconds": step.overrun_seconds,
                       "maxOverrunSeconds": step.max_overrun, "hostComputeSeconds": step.host_seconds} if base > 0 else None,
            "link": None})
    else:
        print("rank %d: %d rounds in %.1f s, accuracy %.4f, model %s" % (rank, args.rounds, end - start, accuracy, final_hash[:16]))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
