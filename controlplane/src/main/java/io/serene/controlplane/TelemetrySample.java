package io.serene.controlplane;

import java.util.BitSet;

/**
 * What a telemetry source reads of a job at one moment, each field with one meaning, from the
 * switch's registers: R and when R passed it (the switch's clock, ns; -1 if unknown), each
 * worker's clock and last compute time; where the source measures them (the simulator), the
 * share of time the workers waited and the mean staleness since the last sample (else 0); and the
 * workers the failure detector reports failed (silent; empty where there is none).
 */
public record TelemetrySample(int releasedRound, long releasedAtNs, int[] clocks, long[] iterationNs, double waitingShare,
                              double staleness, BitSet failed) {
    /** A sample with the switch's registers only. */
    public TelemetrySample(final int releasedRound, final long releasedAtNs, final int[] clocks, final long[] iterationNs) {
        this(releasedRound, releasedAtNs, clocks, iterationNs, 0, 0);
    }

    /** A sample without a failure detector. */
    public TelemetrySample(final int releasedRound, final long releasedAtNs, final int[] clocks, final long[] iterationNs,
                           final double waitingShare, final double staleness) {
        this(releasedRound, releasedAtNs, clocks, iterationNs, waitingShare, staleness, new BitSet());
    }

    /** This sample with the failure detector's verdicts. */
    public TelemetrySample withFailed(final BitSet workers) {
        return new TelemetrySample(releasedRound, releasedAtNs, clocks, iterationNs, waitingShare, staleness, (BitSet) workers.clone());
    }
}
