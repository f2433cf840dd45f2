package io.serene.training;

import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * A worker's steps on the modelled clock: each step lasts its modelled time (the device's step,
 * times the straggler factor, plus any straggler pause), the host's real compute inside it and
 * the rest waited out parked, taking no processor. Counts the steps whose real compute did not
 * fit in their modelled time (overruns): the run's fidelity verdict reads them. Time is a
 * parameter: the clock and the way of waiting are injected, so a test drives it on a fake clock.
 */
public final class ModelledSteps {
    /** Waits until a time on the injected clock. */
    @FunctionalInterface
    public interface Waiter {
        void waitUntil(long deadlineNs);
    }

    /** Parks the calling thread until {@code deadlineNs} on {@code System.nanoTime()} (no spinning: a pause takes no processor). */
    public static final Waiter PARK = deadlineNs -> {
        long left;
        while ((left = deadlineNs - System.nanoTime()) > 0) {
            LockSupport.parkNanos(left);
        }
    };

    private final LongSupplier clock;
    private final Waiter waiter;
    private long steps;
    private long overrunSteps;
    private long overrunNs;
    private long maxOverrunNs;
    private long hostNs;

    public ModelledSteps(final LongSupplier clock, final Waiter waiter) {
        this.clock = clock;
        this.waiter = waiter;
    }

    /** On {@code System.nanoTime()}, parking. */
    public static ModelledSteps onTheMonotonicClock() {
        return new ModelledSteps(System::nanoTime, PARK);
    }

    /**
     * Ends a step that started at {@code startNs} and is modelled to last {@code modelledNs}: its
     * real compute ended now; waits out the rest of the modelled time (nothing if the compute
     * overran it, which is counted). Returns the real compute time.
     */
    public long finish(final long startNs, final long modelledNs) {
        final long computedNs = clock.getAsLong() - startNs;
        steps++;
        hostNs += computedNs;
        if (computedNs > modelledNs) {
            overrunSteps++;
            overrunNs += computedNs - modelledNs;
            maxOverrunNs = Math.max(maxOverrunNs, computedNs - modelledNs);
        } else {
            waiter.waitUntil(startNs + modelledNs);
        }
        return computedNs;
    }

    /**
     * A step's times: {@code computeNs} on the run's clock (the modelled step, or the host's elapsed
     * compute), {@code measuredNs} on the clock the worker reports (the modelled step, or the
     * --compute-clock's), {@code injectedNs} the straggling on top, {@code hostNs} the host's real compute.
     */
    public record Times(long computeNs, long measuredNs, long injectedNs, long hostNs) {
    }

    /**
     * Ends a step begun at {@code startNs} ({@code startClockNs} on {@code clock}), its real compute
     * done now. On a modelled device ({@code stepNs} > 0) the step lasts {@code stepNs} times
     * {@code factor} plus {@code pauseNs}, the rest waited out ({@link #finish}); on the host's clock
     * the worker waits out {@code factor - 1} times its elapsed compute (less {@code viewNs}, the time
     * preparing a model computed ahead on, which a straggler does not compute slower) plus the pause.
     */
    public Times end(final long startNs, final long startClockNs, final ComputeClock clock, final long stepNs, final double factor,
                     final long pauseNs, final long viewNs) {
        if (stepNs > 0) {
            final long modelledNs = Math.round(stepNs * factor) + pauseNs;
            final long realNs = finish(startNs, modelledNs);
            return new Times(stepNs, stepNs, modelledNs - stepNs, realNs);
        }
        final long elapsedNs = this.clock.getAsLong() - startNs;
        final long measuredNs = clock.nanos() - startClockNs;
        // the injected straggling stays a multiple of the elapsed time, whichever clock is reported
        final long injectedNs = Math.max(0, (long) ((factor - 1) * (elapsedNs - viewNs))) + pauseNs;
        if (injectedNs > 0) {
            waiter.waitUntil(this.clock.getAsLong() + injectedNs);
        }
        return new Times(elapsedNs, measuredNs, injectedNs, elapsedNs);
    }

    /** What the steps came to, for a worker's result (times in seconds). */
    public record Report(long steps, long overrunSteps, double overrunSeconds, double maxOverrunSeconds, double hostComputeSeconds) {
    }

    public Report report() {
        return new Report(steps, overrunSteps, overrunNs / 1e9, maxOverrunNs / 1e9, hostNs / 1e9);
    }

    /** Steps finished. */
    public long steps() {
        return steps;
    }

    /** Steps whose real compute took longer than their modelled time. */
    public long overrunSteps() {
        return overrunSteps;
    }

    /** By how much, summed. */
    public long overrunNs() {
        return overrunNs;
    }

    public long maxOverrunNs() {
        return maxOverrunNs;
    }

    /** The host's real compute over every step. */
    public long hostNs() {
        return hostNs;
    }
}
