package io.serene.controlplane;

/**
 * What a telemetry source reads of a job at one moment, each field with one meaning, from the
 * switch's registers: R and when R passed it (the switch's clock, ns; -1 if unknown), each
 * worker's clock and last compute time; and, where the source measures them (the simulator), the
 * share of time the workers waited and the mean staleness since the last sample (else 0).
 */
public record TelemetrySample(int releasedRound, long releasedAtNs, int[] clocks, long[] iterationNs, double waitingShare,
                              double staleness) {
    /** A sample with the switch's registers only. */
    public TelemetrySample(final int releasedRound, final long releasedAtNs, final int[] clocks, final long[] iterationNs) {
        this(releasedRound, releasedAtNs, clocks, iterationNs, 0, 0);
    }
}
