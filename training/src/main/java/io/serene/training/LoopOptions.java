package io.serene.training;

import io.serene.worker.RunClock;
import io.serene.worker.WorkerHost;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;

/**
 * What a worker's training loop ({@link TrainingLoop}) needs besides its parts: this worker's id,
 * the run's settings, its straggler profile (for the job's size); {@code toldToEvaluate} (may be
 * null) gates deferred evaluation;
 * checkpoints go to {@code checkpointDir} after every {@code checkpointEvery}-th round (0: none),
 * {@code resumeFrom} (may be null) is the checkpoint to go on from, and {@code rejoin} (may be
 * null) makes a new connection to the switch that joins by rebuilding a lost job;
 * {@code evaluationShare} (may be null) is the directory deferred evaluations are shared through
 * with the run's other workers on this host ({@link EvaluationShare}); {@code clock} is the run's
 * ({@link RunClock#HOST}, or virtual time), which every time and wait of the loop is on.
 */
public record LoopOptions(int id, TrainSettings settings, StragglerProfile profile, boolean progressLines, String switchAddress,
                          CompletableFuture<Void> toldToEvaluate, Path checkpointDir, int checkpointEvery, Checkpoint resumeFrom,
                          Rejoin rejoin, Path evaluationShare, RunClock clock) {
    public LoopOptions {
        if (checkpointEvery < 0 || (checkpointEvery > 0 && checkpointDir == null)) {
            throw new IllegalArgumentException("checkpoints every " + checkpointEvery + " rounds need a directory and a count >= 0");
        }
    }

    /** A new connection to the switch, joined by a REBUILD JOIN offering these rounds (rounds done), its first round agreed. */
    @FunctionalInterface
    public interface Rejoin {
        WorkerHost join(int[] offers) throws Exception;
    }
}
