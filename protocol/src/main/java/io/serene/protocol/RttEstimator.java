package io.serene.protocol;

/**
 * Smoothed round-trip time and retransmission timeout, after RFC 6298, with the timeout set to
 * twice the smoothed RTT plus four deviations: with a full window the RTT is mostly queueing, and
 * a packet sent at the end of a burst waits longer than the average one.
 */
public final class RttEstimator {
    private final long minRtoNs;
    private final long maxRtoNs;
    private long srttNs = -1;
    private long rttVarNs;
    private long rtoNs;

    public RttEstimator(final long initialRtoNs, final long minRtoNs, final long maxRtoNs) {
        this.minRtoNs = minRtoNs;
        this.maxRtoNs = maxRtoNs;
        this.rtoNs = initialRtoNs;
    }

    /** Feeds one round-trip sample (of a packet sent once: Karn's rule is the caller's). */
    public void sample(final long rttNs) {
        if (srttNs < 0) {
            srttNs = rttNs;
            rttVarNs = rttNs / 2;
        } else {
            rttVarNs = (3 * rttVarNs + Math.abs(srttNs - rttNs)) / 4;
            srttNs = (7 * srttNs + rttNs) / 8;
        }
        rtoNs = Math.max(minRtoNs, Math.min(maxRtoNs, 2 * srttNs + 4 * rttVarNs));
    }

    /** Smoothed RTT, -1 before the first sample. */
    public long srttNs() {
        return srttNs;
    }

    public long rtoNs() {
        return rtoNs;
    }

    /** The longest timeout: no resend waits longer; a packet this late is taken for lost. */
    public long maxRtoNs() {
        return maxRtoNs;
    }

    /** The timeout after {@code retries} resends: doubled each time, capped at the maximum. */
    public long backedOffRtoNs(final int retries) {
        return Math.min(maxRtoNs, rtoNs << Math.min(retries, 16));
    }
}
