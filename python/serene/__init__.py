"""Serene from Python: a client of a local worker agent (``serene agent``), which joins the job
through the switch on the client's behalf. ``serene.torch`` holds a DDP communication hook.
docs/pytorch.md says how to use both."""
from .client import Client, SereneError, default_socket

__all__ = ["Client", "SereneError", "default_socket"]
__version__ = "0.1.0"
