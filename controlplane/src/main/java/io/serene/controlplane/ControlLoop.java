package io.serene.controlplane;

import java.util.List;

/**
 * The control loop every caller runs alike (training, simulation, {@code serene control apply}):
 * it hands the controller each sample in which R advanced, with the round time measured one way:
 * the time per released round between the switch's release times of the last two evaluated R's.
 * Decisions reach the switch through the controller's {@link Controller.SwitchControl}.
 */
public final class ControlLoop {
    private final Controller controller;
    private final TelemetrySource source;
    private int lastRound = -1;
    private long lastReleasedAtNs = -1;
    private int reported;

    /** A loop that reads its samples from {@code source} ({@link #poll}). */
    public ControlLoop(final Controller controller, final TelemetrySource source) {
        this.controller = controller;
        this.source = source;
    }

    /** A loop its caller hands samples to ({@link #onSample}), as a simulator does at each release. */
    public ControlLoop(final Controller controller) {
        this(controller, () -> {
            throw new IllegalStateException("this control loop is handed its samples");
        });
    }

    /**
     * Starts from a sample without evaluating it: rounds up to its R count as seen, and its
     * release time starts the round-time clock (a loop attached to a job already running).
     */
    public void start(final TelemetrySample sample) {
        lastRound = sample.releasedRound();
        lastReleasedAtNs = sample.releasedAtNs();
    }

    /**
     * Reads the source once and evaluates the policy if R advanced. Returns the decisions made
     * since the last call (empty if none), or null once the job is gone.
     */
    public List<Controller.Decision> poll() throws Exception {
        final TelemetrySample sample = source.sample();
        return sample == null ? null : onSample(sample);
    }

    /** Evaluates the policy on a sample if R advanced; returns the decisions made since the last call. */
    public List<Controller.Decision> onSample(final TelemetrySample sample) {
        if (sample.releasedRound() > lastRound) {
            final Controller.Telemetry t = new Controller.Telemetry();
            t.releasedRound = sample.releasedRound();
            t.releasedAtNs = sample.releasedAtNs();
            t.clocks = sample.clocks();
            t.iterationNs = sample.iterationNs();
            t.finished = sample.finished();
            t.waitingShare = sample.waitingShare();
            t.staleness = sample.staleness();
            t.failed = sample.failed();
            t.roundTimeNs = roundTimeNs(lastRound, lastReleasedAtNs, sample.releasedRound(), sample.releasedAtNs());
            lastRound = sample.releasedRound();
            lastReleasedAtNs = sample.releasedAtNs();
            controller.onRound(t);
        }
        final List<Controller.Decision> all = controller.decisions();
        final List<Controller.Decision> fresh = all.subList(reported, all.size());
        reported = all.size();
        return fresh;
    }

    /** The time per released round from R = {@code fromRound} (released at {@code fromNs}) to {@code toRound}; 0 if unknown. */
    static long roundTimeNs(final int fromRound, final long fromNs, final int toRound, final long toNs) {
        return fromRound < 0 || fromNs < 0 || toNs < 0 || toRound <= fromRound ? 0 : (toNs - fromNs) / (toRound - fromRound);
    }
}
