"""A DistributedDataParallel communication hook that sums DDP's gradient buckets in Serene's switch.

    import serene.torch
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(serene.torch.HookState.for_module(ddp), serene.torch.comm_hook)

Every bucket is one round through the switch, under whatever sync config the switch holds (BSP,
quorum, timeout, exclusion): the bucket comes back as the average over the ranks that made it into
the round, the same on every rank. A round carries as many elements as the model has trainable
parameters, so any bucket fits (a smaller one is padded on the wire). Bounded staleness needs a
training loop that asks for clearance (``serene.Client.clearance``): DDP waits for every bucket.

``ModelledStep`` wraps a hook (this one or DDP's own allreduce) in a modelled accelerator.
"""
import time

import torch

from .client import Client


class HookState:
    """The hook's state: a ``serene.Client`` and the next round. ``contributors`` holds how many
    ranks made it into each of the last step's buckets, ``rounds`` how many rounds went through;
    ``compute_seconds``, the step's compute time, is reported with each round (ModelledStep sets it)."""

    def __init__(self, client):
        self.client = client
        self.rounds = 0
        self.compute_seconds = 0.0
        self.contributors = []

    @classmethod
    def for_module(cls, module, **client_args):
        """A state whose rounds fit every bucket of ``module`` (its trainable parameters)."""
        elements = sum(p.numel() for p in module.parameters() if p.requires_grad)
        return cls(Client(elements, varying_size=True, **client_args))

    def close(self):
        self.client.close()


def comm_hook(state, bucket):
    """DDP's communication hook: the bucket's gradients averaged through the switch."""
    grads = bucket.buffer()
    if bucket.index() == 0:
        state.contributors = []
    average, contributors = state.client.allreduce(state.rounds, grads, state.compute_seconds)
    state.rounds += 1
    state.contributors.append(contributors)
    future = torch.futures.Future()
    future.set_result(average)
    return future


class ModelledStep:
    """A modelled accelerator around a communication hook: a step's first bucket waits until the
    step's modelled time is up (the real forward and backward pass ran inside it), then ``hook``
    reduces it. Call ``begin(seconds)`` as each step starts. Given Serene's ``HookState``, a step
    whose round the switch already released without this rank is not waited out: Serene's workers
    do not compute such a round, and a rank the switch does not wait for stays with the others.

    Counts: ``overran`` steps whose real pass took longer than the modelled time (``overrun_seconds``
    in all, ``max_overrun`` the longest), ``host_seconds`` the real passes' time, ``skipped`` steps
    not waited out, ``waited`` seconds in the reduction. The current step: ``host`` its real pass,
    ``sent`` and ``reduced`` (time.time()) its first bucket's hand-in and its last bucket's average."""

    def __init__(self, hook, serene_state=None):
        self.__name__ = self.__qualname__ = "modelled_" + getattr(hook, "__name__", "hook")  # DDP logs a hook's name
        self.hook = hook
        self.serene = serene_state
        self.seconds = 0.0
        self.deadline = 0.0
        self.padded = True
        self.overran = 0
        self.overrun_seconds = 0.0
        self.max_overrun = 0.0
        self.host_seconds = 0.0
        self.host = 0.0
        self.skipped = 0
        self.waited = 0.0
        self.sent = None
        self.reduced = None
        self.skipped_this = False

    def begin(self, seconds):
        """A step of ``seconds`` modelled time starts now."""
        self.seconds = seconds
        self.deadline = time.perf_counter() + seconds
        self.padded = False
        self.skipped_this = False

    def __call__(self, state, bucket):
        if not self.padded:
            self.padded = True
            late = time.perf_counter() - self.deadline
            self.host = self.seconds + late
            self.host_seconds += self.host
            if late > 0:
                self.overran += 1
                self.overrun_seconds += late
                self.max_overrun = max(self.max_overrun, late)
            elif self.serene is not None and self.serene.client.released() >= self.serene.rounds:
                self.skipped += 1
                self.skipped_this = True
            else:
                time.sleep(-late)
            if self.serene is not None:
                self.serene.compute_seconds = self.host if self.skipped_this else max(self.seconds, self.host)
            self.sent = time.time()
        t0 = time.perf_counter()
        future = self.hook(state, bucket)

        def done(f):
            self.waited += time.perf_counter() - t0
            self.reduced = time.time()
            value = f.value()
            return value[0] if isinstance(value, list) else value
        return future.then(done)
