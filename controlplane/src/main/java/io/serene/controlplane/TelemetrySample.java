package io.serene.controlplane;

import java.util.BitSet;

/**
 * What a telemetry source reads of a job at one moment, each field with one meaning, from the
 * switch's registers: R and when R passed it (the switch's clock, ns; -1 if unknown), each
 * worker's clock and last compute time, and each worker's last finished round with its compute time
 * and arrival offset there ({@link FinishedRounds}; NONE where the source does not read them); where the
 * source measures them (the simulator), the share of time the workers waited and the mean staleness
 * since the last sample (else 0); and the workers the failure detector reports failed (silent;
 * empty where there is none).
 */
public record TelemetrySample(int releasedRound, long releasedAtNs, int[] clocks, long[] iterationNs, FinishedRounds finished,
                              double waitingShare, double staleness, BitSet failed) {
    /** A sample with the switch's registers only. */
    public TelemetrySample(final int releasedRound, final long releasedAtNs, final int[] clocks, final long[] iterationNs,
                           final FinishedRounds finished) {
        this(releasedRound, releasedAtNs, clocks, iterationNs, finished, 0, 0, new BitSet());
    }

    /** A sample with the switch's registers only, without the finished rounds. */
    public TelemetrySample(final int releasedRound, final long releasedAtNs, final int[] clocks, final long[] iterationNs) {
        this(releasedRound, releasedAtNs, clocks, iterationNs, FinishedRounds.NONE);
    }

    /** This sample with the failure detector's verdicts. */
    public TelemetrySample withFailed(final BitSet workers) {
        return new TelemetrySample(releasedRound, releasedAtNs, clocks, iterationNs, finished, waitingShare, staleness,
            (BitSet) workers.clone());
    }
}
