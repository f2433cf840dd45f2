package io.serene.launch;

import java.nio.file.Path;

/** Where a run's files go, under its output directory. */
record RunFiles(Path out) {
    /** Worker w's round records, one JSON line a round. */
    Path recordsFile(final int w) {
        return out.resolve("workers").resolve("worker-" + w + ".jsonl");
    }

    /** A worker's whole output, next to its records. */
    Path logFile(final int w) {
        return out.resolve("workers").resolve("worker-" + w + ".log");
    }

    /** Where the workers share deferred evaluations of the models they hold alike (EvaluationShare). */
    Path evaluationShare() {
        return out.resolve("workers").resolve("evaluations");
    }

    /** Where the workers write their checkpoints. */
    Path checkpoints() {
        return out.resolve("checkpoints");
    }
}
