package io.serene.controlplane;

/**
 * Each worker's last finished round as the switch saw it (the round before its newest): the
 * round's number (-1: none yet), the worker's compute time in it, and its arrival offset there
 * (the most any of its packets of that round came after the first packet of the same step from
 * any worker, ns: what a timeout measured from that first packet compares). The two times are of
 * the same round, so the {@code auto} policy's model can tell compute from the rest of an arrival.
 */
public record FinishedRounds(int[] rounds, long[] computeNs, long[] offsetNs) {
    /** None read (a source that does not read them). */
    public static final FinishedRounds NONE = new FinishedRounds(new int[0], new long[0], new long[0]);

    public FinishedRounds {
        if (rounds.length != computeNs.length || rounds.length != offsetNs.length) {
            throw new IllegalArgumentException("finished rounds of " + rounds.length + " workers with " + computeNs.length
                + " compute times and " + offsetNs.length + " offsets");
        }
    }

    /** How many workers these cover (0: none read). */
    public int workers() {
        return rounds.length;
    }
}
