package io.serene.protocol;

/** Bits of the header's flags field. */
public final class Flags {
    /** DATA / RESULT: the payload is gradient values, aggregated by saturating int32 addition. */
    public static final int VALUES = 1;
    /** DATA: the worker clamped some values to fit the agreed scale. RESULT: a sum saturated. */
    public static final int SATURATED = 2;
    /** RESULT: a unicast re-send to a worker that retransmitted after the release. */
    public static final int RETRANSMIT = 4;
    /** DATA / RESULT: the payload is per-chunk exponents, aggregated by maximum. */
    public static final int EXPONENTS = 8;
    /**
     * JOIN: rebuild the job from checkpoints (a worker whose job the switch lost, or a restarted one):
     * the body offers the rounds it can go on after; the job is formed anew once every worker joined.
     */
    public static final int REBUILD = 16;
    /**
     * CONFIG: the entry is WBSP's (a worker waiting for clearance keeps computing gradients and
     * sends their mean with its next contribution, {@code SyncConfig.busy()}).
     */
    public static final int BUSY = 32;
    /**
     * DATA: a report, no contribution: the worker computed (or skipped) a round released without it
     * and tells the switch its compute time there (header only, no payload). The switch takes it as
     * telemetry only, for a round it has released: nothing summed, nothing answered.
     */
    public static final int REPORT = 64;
    /** Either payload kind. */
    public static final int PAYLOAD = VALUES | EXPONENTS;

    private Flags() {
    }
}
