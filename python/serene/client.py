"""The client side of the agent's protocol (version 1; docs/pytorch.md, "The agent's protocol").

Frames on a Unix stream socket, little-endian: a 4-byte length of what follows, a type byte, the
type's fields (i32, u16, strings as a u16 length and UTF-8). Gradients and averages sit in a shared
file the agent names in its WELCOME: ``elements`` float32 from offset 0.
"""
import mmap
import os
import shlex
import shutil
import socket
import struct
import subprocess
import tempfile
import time

import numpy as np

MAGIC = 0x414E5253
VERSION = 1
HELLO, WELCOME, ALLREDUCE, RESULT, CLEARANCE, CLEARED, CONFIG, CONFIG_IS, ERROR, BYE, RELEASED, RELEASED_IS = range(1, 13)
MAX_FRAME = 1 << 17


class SereneError(RuntimeError):
    """What went wrong between this process, its agent and the switch, in words."""


def default_socket(job, rank):
    """Where the agent of ``rank`` in ``job`` listens unless told otherwise (``serene agent --socket``'s default)."""
    return os.path.join(tempfile.gettempdir(), "serene-agent-%d-%d.sock" % (job, rank))


def _env_int(names, given, what):
    if given is not None:
        return int(given)
    for name in names:
        if os.environ.get(name):
            return int(os.environ[name])
    raise SereneError("%s: pass it, or set %s (torchrun and Slurm do)" % (what, " or ".join(names)))


class Client:
    """One rank's way to the switch, through its agent.

    ``elements`` is the most float32 values a round carries (the same for every rank). The rank,
    the job's size, the job and the switch come from the arguments, else from RANK, WORLD_SIZE,
    SERENE_JOB (default 1) and SERENE_SWITCH (default 127.0.0.1:7000). When no agent listens at
    the socket, the client starts one (``agent_command``, else SERENE_AGENT_COMMAND, else
    ``serene`` on the PATH, with ``agent`` and its options appended) that ends with this process.
    ``timeout`` (else SERENE_TIMEOUT, else 125) bounds every wait for the agent, in seconds; the
    agent's own waits (a round's aggregate, a join) are ``timeout - 5``.
    """

    def __init__(self, elements, rank=None, world_size=None, job=None, switch=None, socket_path=None,
                 agent_command=None, timeout=None, varying_size=False):
        if int(elements) < 1:
            raise SereneError("a round carries at least one element, got %r" % (elements,))
        self.elements = int(elements)
        self.rank = _env_int(["RANK", "SLURM_PROCID"], rank, "the rank")
        self.world_size = _env_int(["WORLD_SIZE", "SLURM_NTASKS"], world_size, "the job's size")
        self.job = int(job if job is not None else os.environ.get("SERENE_JOB", "1"))
        self.switch = switch or os.environ.get("SERENE_SWITCH", "127.0.0.1:7000")
        self.socket_path = socket_path or os.environ.get("SERENE_AGENT_SOCKET") or default_socket(self.job, self.rank)
        self.timeout = float(timeout if timeout is not None else os.environ.get("SERENE_TIMEOUT", "125"))
        self.varying_size = varying_size
        self.agent = None
        self.skipped = False
        self._first = None
        self._last_size = None
        self._sock = self._connect(agent_command)
        self._sock.settimeout(self.timeout)
        try:
            self._send(struct.pack("<BIHiii", HELLO, MAGIC, VERSION, self.rank, self.world_size, self.elements))
            body = self._expect(WELCOME, "joining job %d at %s" % (self.job, self.switch))
            (_version, agreed), body = struct.unpack_from("<Hi", body), body[6:]
            path, body = _string(body)
            self.config_at_join, _ = _string(body)
            fd = os.open(path, os.O_RDWR)
            try:
                self._map = mmap.mmap(fd, 4 * agreed)
            finally:
                os.close(fd)
            self._shared = np.frombuffer(self._map, dtype=np.float32, count=agreed)
        except BaseException:
            self._sock.close()
            raise

    # -- the agent --------------------------------------------------------------------------
    def _connect(self, agent_command):
        sock = _try_connect(self.socket_path)
        if sock is not None:
            return sock
        command = list(agent_command) if agent_command else None
        if command is None and os.environ.get("SERENE_AGENT_COMMAND"):
            command = shlex.split(os.environ["SERENE_AGENT_COMMAND"])
        if command is None and shutil.which("serene"):
            command = ["serene"]
        if command is None:
            raise SereneError("no agent at %s and none to start: put Serene's `serene` on the PATH or set SERENE_AGENT_COMMAND"
                              % self.socket_path)
        log_path = self.socket_path + ".log"
        log = open(log_path, "wb")
        wait = max(1, int(self.timeout) - 5)
        try:
            self.agent = subprocess.Popen(command + [
                "agent", "--id", str(self.rank), "--workers", str(self.world_size), "--job", str(self.job), "--switch", self.switch,
                "--socket", self.socket_path, "--exit-with-parent", "--timeout-seconds", str(wait)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT)
        except OSError as e:
            raise SereneError("cannot start the agent %s: %s" % (" ".join(command), e)) from None
        finally:
            log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.agent.poll() is not None:
                raise SereneError("the agent exited (%d) before it served %s: %s" % (self.agent.returncode, self.socket_path, _tail(log_path)))
            sock = _try_connect(self.socket_path)
            if sock is not None:
                return sock
            time.sleep(0.05)
        self.agent.kill()
        raise SereneError("the agent did not serve %s within 60 s: %s" % (self.socket_path, _tail(log_path)))

    # -- requests ---------------------------------------------------------------------------
    def allreduce(self, round, tensor, compute_seconds=0.0):
        """Hands this rank's gradient for ``round`` (0, 1, 2, ... in order) to the switch; returns
        the average over the ranks that made it into the round, as a new array or tensor like
        ``tensor``, and how many they were. ``compute_seconds`` (0: not reported) goes to the switch's
        telemetry, which policies read (under a timeout, quorum or exclusion, fewer than all;
        every rank gets the same average). ``skipped`` says whether the round was released without
        this rank before its gradient came (then the gradient was dropped)."""
        values, like = self._check(round, tensor)
        n = values.size
        self._shared[:n] = values
        self._send(struct.pack("<Biii", ALLREDUCE, int(round), n, min(int(compute_seconds * 1e6), 2 ** 31 - 1)))
        body = self._expect(RESULT, "round %d" % round)
        got, contributors, skipped = struct.unpack_from("<iii", body)
        self.skipped = bool(skipped)
        if got != round:
            raise SereneError("the agent answered round %d to round %d" % (got, round))
        average = self._shared[:n].copy()
        return like(average), contributors

    def clearance(self, round):
        """Waits until this rank may compute ``round`` under the sync config in force (bounded
        staleness lets it run ahead of the slowest rank by the bound); returns the bound."""
        self._send(struct.pack("<Bi", CLEARANCE, int(round)))
        _, bound = struct.unpack_from("<ii", self._expect(CLEARED, "clearance for round %d" % round))
        return bound

    def released(self):
        """R: the highest round such that every round up to it is released, as this rank's agent last
        heard (-1 before the first). A rank behind R may skip computing the rounds up to it."""
        self._send(struct.pack("<B", RELEASED))
        return struct.unpack_from("<i", self._expect(RELEASED_IS, "the released round"))[0]

    def config(self):
        """The sync config in force for this rank's next round, in words ("bound 0, late: fold (epoch 1)")."""
        self._send(struct.pack("<B", CONFIG))
        return _string(self._expect(CONFIG_IS, "the config"))[0]

    def close(self):
        """Tells the agent this rank is done: it leaves the job and exits."""
        if self._sock is None:
            return
        try:
            self._send(struct.pack("<B", BYE))
        except (SereneError, OSError):
            pass
        self._sock.close()
        self._sock = None
        if self.agent is not None:
            try:
                self.agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.agent.kill()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- what a round may carry ---------------------------------------------------------------
    def _check(self, round, tensor):
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and isinstance(tensor, torch.Tensor):
            kind = ("torch", tensor.dtype, tensor.device)
            if not tensor.dtype.is_floating_point:
                raise SereneError("round %d: a %s tensor; Serene sums floating-point gradients" % (round, tensor.dtype))
            values = tensor.detach().reshape(-1).to("cpu", torch.float32).numpy()

            def like(a, dtype=tensor.dtype, device=tensor.device, shape=tensor.shape):
                return torch.from_numpy(a).reshape(shape).to(device, dtype)
        else:
            array = np.asarray(tensor)
            kind = ("numpy", array.dtype, "cpu")
            if array.dtype.kind != "f":
                raise SereneError("round %d: an array of %s; Serene sums floating-point gradients" % (round, array.dtype))
            values = array.reshape(-1).astype(np.float32, copy=False)

            def like(a, dtype=array.dtype, shape=array.shape):
                return a.reshape(shape).astype(dtype, copy=False)
        if self._first is None:
            self._first = kind
        elif kind != self._first:
            raise SereneError("round %d: a %s %s on %s, where the rounds before carried %s %s on %s" % ((round,) + kind + self._first))
        if values.size > self.elements:
            raise SereneError("round %d: %d elements, the job's rounds carry at most %d" % (round, values.size, self.elements))
        if not self.varying_size and self._last_size is not None and values.size != self._last_size:
            raise SereneError("round %d: %d elements, the round before carried %d" % (round, values.size, self._last_size))
        self._last_size = values.size
        return values, like

    # -- frames -------------------------------------------------------------------------------
    def _send(self, payload):
        if self._sock is None:
            raise SereneError("the client is closed")
        try:
            self._sock.sendall(struct.pack("<I", len(payload)) + payload)
        except OSError as e:
            # an agent that refused this client said why before it closed the connection
            raise SereneError(self._last_words() or "the agent at %s is gone (%s)%s" % (self.socket_path, e, self._agent_state())) from None

    def _expect(self, kind, what):
        try:
            head = _recv_exactly(self._sock, 4)
            (length,) = struct.unpack("<I", head)
            if length < 1 or length > MAX_FRAME:
                raise SereneError("%s: a frame of %d bytes from %s: not a Serene agent" % (what, length, self.socket_path))
            body = _recv_exactly(self._sock, length)
        except socket.timeout:
            raise SereneError("%s: no answer from the agent at %s within %.0f s%s"
                              % (what, self.socket_path, self.timeout, self._agent_state())) from None
        except (EOFError, OSError) as e:
            raise SereneError("%s: the agent at %s went away (%s)%s" % (what, self.socket_path, e, self._agent_state())) from None
        if body[0] == ERROR:
            raise SereneError("%s: %s" % (what, _string(body[1:])[0]))
        if body[0] != kind:
            raise SereneError("%s: the agent answered a frame of type %d, not %d" % (what, body[0], kind))
        return body[1:]

    def _last_words(self):
        """The reason of an ERROR frame the agent sent before it closed the connection, or None."""
        try:
            self._sock.settimeout(1.0)
            (length,) = struct.unpack("<I", _recv_exactly(self._sock, 4))
            body = _recv_exactly(self._sock, min(length, MAX_FRAME))
            return _string(body[1:])[0] if body[0] == ERROR else None
        except (OSError, EOFError, struct.error):
            return None

    def _agent_state(self):
        if self.agent is not None and self.agent.poll() is not None:
            return "; it exited with %d: %s" % (self.agent.returncode, _tail(self.socket_path + ".log"))
        return ""


def _try_connect(path):
    if not os.path.exists(path):
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return sock
    except OSError:
        sock.close()
        return None


def _recv_exactly(sock, n):
    chunks = bytearray()
    while len(chunks) < n:
        got = sock.recv(n - len(chunks))
        if not got:
            raise EOFError("the connection ended")
        chunks += got
    return bytes(chunks)


def _string(body):
    (n,) = struct.unpack_from("<H", body)
    return body[2:2 + n].decode("utf-8"), body[2 + n:]


def _tail(path, lines=5):
    try:
        with open(path, "rb") as f:
            return " | ".join(f.read().decode("utf-8", "replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"
