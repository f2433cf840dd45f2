"""A rank started by ``serene train --pytorch SCRIPT``: what the launcher gives it and what it expects back.

    launched = serene.run.Launched.here()     # None under torchrun or by hand
    if launched:
        launched.joined()                      # waits until every rank joined
        ...                                    # per round: launched.round_done(record)
        launched.trained()                     # waits until every rank trained
        ...                                    # evaluate the model copies (launched.share_evaluation)
        launched.finish(records, result)

The launcher sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT (the ranks' own process group),
SERENE_SWITCH, SERENE_JOB, SERENE_SECRET and SERENE_AGENT_COMMAND (the client's agent), and the run's
settings: SERENE_PLAN (every rank's batches and modelled step times, stragglers included),
SERENE_ROUNDS, SERENE_BATCH, SERENE_SEED, SERENE_LR, SERENE_MOMENTUM, SERENE_EVAL_EVERY, SERENE_DATA,
SERENE_STRAGGLERS, SERENE_STEP_TIME (and SERENE_STEP_SECONDS, a step without straggling), SERENE_RECORDS (this rank's records file), SERENE_EPOCH_MS (the
run's time axis) and SERENE_EVALUATIONS (a directory the ranks share evaluations of equal models in).
The rank answers on standard output as ``serene worker`` does: ``@joined``, ``@progress ROUND LOSS``,
``@trained``, and one JSON line, its result; it reads ``start`` and ``evaluate`` on standard input,
and its end means the launcher is gone.
"""
import json
import os
import sys
import threading
import time

import numpy as np


class Launched:
    """This rank's part in a run of ``serene train --pytorch``."""

    @staticmethod
    def here():
        """The launcher's rank, or None when no launcher started this process."""
        return Launched(os.environ) if os.environ.get("SERENE_RECORDS") else None

    def __init__(self, env):
        self.rank = int(env["RANK"])
        self.world_size = int(env["WORLD_SIZE"])
        self.rounds = int(env["SERENE_ROUNDS"])
        self.batch = int(env["SERENE_BATCH"])
        self.seed = int(env["SERENE_SEED"])
        self.lr = float(env["SERENE_LR"])
        self.momentum = float(env["SERENE_MOMENTUM"])
        self.eval_every = int(env["SERENE_EVAL_EVERY"])
        self.data = env["SERENE_DATA"]
        self.stragglers = env.get("SERENE_STRAGGLERS", "none")
        self.step_time = env.get("SERENE_STEP_TIME", "0")
        self.step_seconds_base = float(env.get("SERENE_STEP_SECONDS", "0"))
        self.records_path = env["SERENE_RECORDS"]
        self.epoch = int(env["SERENE_EPOCH_MS"]) / 1e3
        self.evaluations = env.get("SERENE_EVALUATIONS")
        _, self.indexes, self.step_seconds = read_plan(env["SERENE_PLAN"], self.rank)
        self._start = threading.Event()
        self._evaluate = threading.Event()
        threading.Thread(target=self._stdin, name="launcher", daemon=True).start()

    def now(self):
        """Seconds on the run's time axis."""
        return time.time() - self.epoch

    def joined(self):
        """Says this rank joined and waits until the launcher starts the job (every rank joined)."""
        print("@joined", flush=True)
        self._start.wait()

    def round_done(self, round, loss):
        """Reports a round's progress to the launcher."""
        print("@progress %d %.6f" % (round, loss), flush=True)

    def trained(self):
        """Says this rank trained and waits until every rank did (evaluation then takes no processor from training)."""
        print("@trained", flush=True)
        self._evaluate.wait()

    def share_evaluation(self, model_hash, evaluate):
        """The accuracy of the model with ``model_hash``: evaluated once for all ranks that hold it
        (the ranks' models are equal), by whichever rank comes first; ``evaluate()`` computes it."""
        if not self.evaluations:
            return evaluate()
        path = os.path.join(self.evaluations, model_hash + ".json")
        claim = path + ".claim"
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                if os.path.exists(path):
                    with open(path) as f:
                        return json.load(f)["accuracy"]
                time.sleep(0.02)
            return evaluate()
        os.close(fd)
        accuracy = evaluate()
        with open(path + ".tmp", "w") as f:
            json.dump({"accuracy": accuracy}, f)
        os.replace(path + ".tmp", path)
        return accuracy

    def finish(self, records, result):
        """Writes the rank's records (a dict each, RoundRecord's fields) and prints its result (WorkerResult's)."""
        with open(self.records_path, "w") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")
        print(json.dumps(result), flush=True)

    def _stdin(self):
        for line in sys.stdin:
            if line.strip() == "start":
                self._start.set()
            elif line.strip() == "evaluate":
                self._evaluate.set()
        # the launcher is gone
        os._exit(3)


def read_plan(path, rank):
    """The job's workers, and this rank's batches (rounds x batch indexes into the training set) and
    modelled step seconds (rounds), from the plan file serene wrote (DdpBaseline.writePlan): workers,
    rounds, batch (int32), every worker's indexes, every worker's step times (float64), little-endian."""
    with open(path, "rb") as f:
        data = f.read()
    workers, rounds, batch = (int(v) for v in np.frombuffer(data, dtype="<i4", count=3))
    expected = 12 + 4 * workers * rounds * batch + 8 * workers * rounds
    if len(data) != expected or not 0 <= rank < workers:
        raise SystemExit("%s: %d bytes for %d workers (rank %d), expected %d" % (path, len(data), workers, rank, expected))
    offset = 12 + 4 * rounds * batch * rank
    indexes = np.frombuffer(data, dtype="<i4", count=rounds * batch, offset=offset).reshape(rounds, batch)
    offset = 12 + 4 * rounds * batch * workers + 8 * rounds * rank
    steps = np.frombuffer(data, dtype="<f8", count=rounds, offset=offset)
    return workers, indexes, steps
