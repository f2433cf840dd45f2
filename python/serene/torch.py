"""A DistributedDataParallel communication hook that sums DDP's gradient buckets in Serene's switch.

    import serene.torch
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    ddp.register_comm_hook(serene.torch.HookState.for_module(ddp), serene.torch.comm_hook)

Every bucket is one round through the switch, under whatever sync config the switch holds (BSP,
quorum, timeout, exclusion): the bucket comes back as the average over the ranks that made it into
the round, the same on every rank. A round carries as many elements as the model has trainable
parameters, so any bucket fits (a smaller one is padded on the wire). Bounded staleness needs a
training loop that asks for clearance (``serene.Client.clearance``): DDP waits for every bucket.
"""
import torch

from .client import Client


class HookState:
    """The hook's state: a ``serene.Client`` and the next round. ``contributors`` holds how many
    ranks made it into each of the last step's buckets, ``rounds`` how many rounds went through."""

    def __init__(self, client):
        self.client = client
        self.rounds = 0
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
    average, contributors = state.client.allreduce(state.rounds, grads)
    state.rounds += 1
    state.contributors.append(contributors)
    future = torch.futures.Future()
    future.set_result(average)
    return future
