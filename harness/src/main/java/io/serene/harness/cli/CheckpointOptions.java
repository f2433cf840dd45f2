package io.serene.harness.cli;

import picocli.CommandLine.Option;

/** The checkpoint option {@code serene train} and {@code serene worker} share. */
final class CheckpointOptions {
    @Option(names = "--checkpoint-every", defaultValue = "0", description = "Checkpoint every N rounds: each worker, once every "
        + "round up to the N-th is applied (a barrier for its own model), writes its model, optimizer state, data position, "
        + "records and model copies (docs/deploy.md, Checkpoints); 0: none. Default: ${DEFAULT-VALUE}.")
    int every;

    /** The interval, checked. */
    int every() {
        if (every < 0) {
            throw new IllegalArgumentException("--checkpoint-every must be >= 0 (0: no checkpoints), was " + every);
        }
        return every;
    }
}
