package io.serene.worker;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;

/**
 * The clock a worker's training runs on, and its ways of waiting: this host's monotonic clock
 * ({@link #HOST}), or a run's virtual time ({@link VirtualClock}), where a wait hands the run to
 * whatever happens next in virtual time. Everything a training loop times or waits for goes through
 * one, so the same loop runs on either clock.
 */
public interface RunClock {
    /** This host's clock: {@code System.nanoTime()}, waits park the thread. */
    RunClock HOST = new RunClock() {
        @Override
        public long nanoTime() {
            return System.nanoTime();
        }

        @Override
        public void parkUntil(final long deadlineNs) throws InterruptedException {
            long left;
            while ((left = deadlineNs - System.nanoTime()) > 0) {
                LockSupport.parkNanos(left);
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
        }

        @Override
        public boolean awaitUntil(final CompletableFuture<?> future, final long deadlineNs) throws InterruptedException {
            if (future.isDone()) {
                return true;
            }
            final long left = deadlineNs - System.nanoTime();
            if (left <= 0) {
                return false;
            }
            try {
                future.get(left, TimeUnit.NANOSECONDS);
                return true;
            } catch (final TimeoutException ex) {
                return false;
            } catch (final ExecutionException ex) {
                return true;
            }
        }

        @Override
        public boolean virtual() {
            return false;
        }

        @Override
        public String toString() {
            return "the host's clock";
        }
    };

    /** Now, in nanoseconds (differences only). */
    long nanoTime();

    /** Waits until {@code deadlineNs} on this clock, taking no processor. */
    void parkUntil(long deadlineNs) throws InterruptedException;

    /** Waits for {@code future} until {@code deadlineNs} on this clock; whether it is done (a failure counts as done). */
    boolean awaitUntil(CompletableFuture<?> future, long deadlineNs) throws InterruptedException;

    /** Whether this is a run's virtual time (the host's speed does not show in it). */
    boolean virtual();
}
