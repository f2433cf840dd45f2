package io.serene.training;

import io.serene.worker.RunClock;

import java.util.function.LongSupplier;

/**
 * A worker's steps on the modelled clock: each step lasts its modelled time (the device's step,
 * times the straggler factor, plus any straggler pause), the host's real compute inside it and
 * the rest waited out parked, taking no processor. A step is all a worker does on its own device
 * between the last thing it waited for (clearance, an aggregate: {@link #waited}) or its previous
 * step and its gradient: applying the aggregates that arrived (the optimizer step), drawing the
 * batch, the forward and backward pass. So the host's own work there is inside the modelled time,
 * as a device's is, not added to it. Counts the steps whose work did not fit in their modelled time
 * (overruns): the run's fidelity verdict reads them. Time is a
 * parameter: the run's clock (which also waits) and the host's are injected, so a test drives it on a
 * fake clock, and a run in virtual time on its own.
 */
public final class ModelledSteps {
    private final RunClock clock;
    /** The host's own clock, which the real compute is measured on (on the host's clock: the run's). */
    private final LongSupplier host;
    private long runStartNs;
    private long hostStartNs;
    /** When the modelled step begun last opened, and when the worker last stopped waiting for others or ended a step. */
    private long windowStartNs;
    private long readyNs = Long.MIN_VALUE;
    private long steps;
    private long overrunSteps;
    private long overrunNs;
    private long maxOverrunNs;
    private long hostNs;

    /** Steps on {@code clock}, their real compute measured on {@code host}. */
    public ModelledSteps(final RunClock clock, final LongSupplier host) {
        this.clock = clock;
        this.host = host;
    }

    /** On the run's clock, the real compute on this host's ({@code System.nanoTime()}). */
    public static ModelledSteps on(final RunClock clock) {
        return new ModelledSteps(clock, System::nanoTime);
    }

    /** The worker stopped waiting for others (clearance, an aggregate) now: its next step opens here at the earliest. */
    public void waited() {
        readyNs = clock.nanoTime();
    }

    /** A step's real compute starts now; on the modelled clock the step opened when the worker was last ready ({@link #waited}). */
    public void begin() {
        runStartNs = clock.nanoTime();
        hostStartNs = host.getAsLong();
        windowStartNs = readyNs == Long.MIN_VALUE ? runStartNs : readyNs;
    }

    /** A straggler's step on a modelled device: the device's step times its factor, plus its pause. */
    public static long modelledNs(final long stepNs, final double factor, final long pauseNs) {
        return Math.round(stepNs * factor) + pauseNs;
    }

    /**
     * Ends the step begun last, modelled to last {@code modelledNs} from when it opened: its real
     * compute ended now; waits out the rest of the modelled time (nothing if the work overran it on
     * the run's clock, which is counted; in virtual time the host's work takes no time, and nothing
     * overruns). Returns the real compute time.
     */
    public long finish(final long modelledNs) throws InterruptedException {
        final long computedNs = host.getAsLong() - hostStartNs;
        final long elapsedNs = clock.nanoTime() - windowStartNs;
        steps++;
        hostNs += computedNs;
        if (elapsedNs > modelledNs) {
            overrunSteps++;
            overrunNs += elapsedNs - modelledNs;
            maxOverrunNs = Math.max(maxOverrunNs, elapsedNs - modelledNs);
        } else {
            clock.parkUntil(windowStartNs + modelledNs);
        }
        // the next step opens when this one ends, unless the worker waits for others first
        readyNs = clock.nanoTime();
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
     * Ends the step begun last ({@code startClockNs} on {@code clock}), its real compute done now.
     * On a modelled device ({@code stepNs} > 0) the step lasts {@code stepNs} times {@code factor}
     * plus {@code pauseNs}, the rest waited out ({@link #finish}); on the host's clock the worker
     * waits out {@code factor - 1} times its elapsed compute (less {@code viewNs}, the time preparing
     * a model computed ahead on, which a straggler does not compute slower) plus the pause.
     */
    public Times end(final long startClockNs, final ComputeClock clock, final long stepNs, final double factor, final long pauseNs,
                     final long viewNs) throws InterruptedException {
        if (stepNs > 0) {
            final long modelledNs = modelledNs(stepNs, factor, pauseNs);
            final long realNs = finish(modelledNs);
            return new Times(stepNs, stepNs, modelledNs - stepNs, realNs);
        }
        if (this.clock.virtual()) {
            throw new IllegalStateException("virtual time needs a modelled device (--step-time): a step must have a modelled length");
        }
        final long elapsedNs = this.clock.nanoTime() - runStartNs;
        final long measuredNs = clock.nanos() - startClockNs;
        // the injected straggling stays a multiple of the elapsed time, whichever clock is reported
        final long injectedNs = Math.max(0, (long) ((factor - 1) * (elapsedNs - viewNs))) + pauseNs;
        if (injectedNs > 0) {
            this.clock.parkUntil(this.clock.nanoTime() + injectedNs);
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
