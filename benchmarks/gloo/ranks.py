"""The baselines' common launcher: N processes (ranks) of one function on 127.0.0.1, gloo's
rendezvous on a free port, rank 0's result (one dict) printed as one JSON line.

Needs Debian's python3-torch (apt-get install python3-torch); run with /usr/bin/python3.
"""
import json
import socket
import sys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name, worker, args, workers):
    """Runs worker(rank, args, port, queue) in `workers` processes; prints what rank 0 put on the queue."""
    try:
        import torch.multiprocessing as mp
    except ImportError:
        sys.exit("%s: PyTorch is not installed (apt-get install python3-torch; run with /usr/bin/python3)" % name)
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, args, port, queue)) for r in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    if any(p.exitcode != 0 for p in procs) or queue.empty():
        sys.exit("%s: a gloo process failed (exit codes %s)" % (name, [p.exitcode for p in procs]))
    print(json.dumps(queue.get()))
