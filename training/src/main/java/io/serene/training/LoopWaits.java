package io.serene.training;

import io.serene.worker.RunClock;
import io.serene.worker.WorkerException;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * How the training loop waits on its worker engine and the switch: on the run's clock, at most the
 * run's timeout, with failures turned into errors that name what was awaited, or into
 * {@link PlaceLost} when the worker can join again from checkpoints.
 */
final class LoopWaits {
    /**
     * The worker lost its place in the job: the switch lost the job (it restarted, or a worker back
     * from a checkpoint rebuilds it), or went on past rounds whose results the worker never got.
     */
    static final class PlaceLost extends RuntimeException {
        private static final long serialVersionUID = 1L;
        /** The job went on without this worker (it joins again as a restarted worker does), not the switch lost it. */
        final boolean behind;

        PlaceLost(final String message, final boolean behind) {
            super(message);
            this.behind = behind;
        }
    }

    private final int id;
    private final int timeoutSeconds;
    private final String switchAddress;
    private final RunClock clock;
    private final ModelledSteps steps;

    LoopWaits(final int id, final int timeoutSeconds, final String switchAddress, final RunClock clock, final ModelledSteps steps) {
        this.id = id;
        this.timeoutSeconds = timeoutSeconds;
        this.switchAddress = switchAddress;
        this.clock = clock;
        this.steps = steps;
    }

    /**
     * Waits for others (the switch's clearance, an aggregate): if the worker had to wait, its next
     * modelled step opens when the wait ends ({@link ModelledSteps#waited}).
     */
    <T> T waitFor(final CompletableFuture<T> future, final String what) throws InterruptedException {
        final boolean blocks = !future.isDone();
        final T value = await(future, what);
        if (blocks) {
            steps.waited();
        }
        return value;
    }

    /** Whether the future completed by {@code deadlineNs} on the run's clock; if the worker waited, as {@link #waitFor}. */
    boolean waitUntil(final CompletableFuture<?> future, final long deadlineNs) throws InterruptedException {
        final boolean blocks = !future.isDone();
        final boolean done = clock.awaitUntil(future, deadlineNs);
        if (blocks) {
            steps.waited();
        }
        return done;
    }

    /** The future's value once it completes, within the run's timeout. */
    <T> T await(final CompletableFuture<T> future, final String what) throws InterruptedException {
        try {
            if (!clock.awaitUntil(future, clock.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds))) {
                throw new TimeoutException();
            }
            return future.get();
        } catch (final TimeoutException ex) {
            throw new IllegalStateException("worker " + id + ": no " + what + " within " + timeoutSeconds
                + " s (is the switch at " + switchAddress + " running?)");
        } catch (final ExecutionException ex) {
            if (ex.getCause() instanceof WorkerException w && w.lost() != WorkerException.Lost.NOTHING) {
                throw new PlaceLost("worker " + id + ": " + w.getMessage(), w.lost() == WorkerException.Lost.PLACE);
            }
            throw new IllegalStateException("worker " + id + ": " + what + " failed: " + ex.getCause().getMessage());
        }
    }
}
