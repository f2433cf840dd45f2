package io.serene.dataplane;

import java.util.Arrays;

/**
 * The release ring: per job the highest released round R and, for the G rounds from R on, how
 * many of a round's chunks are released and when R passed it, and the timeout latch. O(G) state
 * per job, independent of model size and run length (round r uses entry r mod G, reset when R
 * passes it so it can serve round r + G).
 */
final class ReleaseRing {
    static final int NO_LATCH = Integer.MIN_VALUE;

    private final int ring;
    private final int words;
    /** [job]: R, -1 before the first release. */
    final int[] releasedRound;
    /** [job]: when the job was created (the switch's clock). */
    final long[] createdNs;
    /** [job * G + round mod G]: chunks of the round released so far. */
    final int[] count;
    /** [job * G + round mod G]: when R passed the round. */
    final long[] ns;
    /**
     * The timeout latch, per entry: once one of a round's steps was released by its timeout, the
     * round's other steps are released as soon as they hold every worker that release held (the
     * intersection, if several timed out), instead of each waiting out its own timeout.
     */
    final int[] latchRound;
    final long[] latchBitmap;

    ReleaseRing(final int maxJobs, final int ring, final int words) {
        this.ring = ring;
        this.words = words;
        releasedRound = new int[maxJobs];
        createdNs = new long[maxJobs];
        count = new int[maxJobs * ring];
        ns = new long[maxJobs * ring];
        latchRound = new int[maxJobs * ring];
        Arrays.fill(latchRound, NO_LATCH);
        latchBitmap = new long[maxJobs * ring * words];
    }

    long bytes() {
        return 4L * releasedRound.length + 8L * createdNs.length + 4L * count.length + 8L * ns.length + 4L * latchRound.length + 8L * latchBitmap.length;
    }

    void reset(final int j, final long nowNs) {
        releasedRound[j] = -1;
        createdNs[j] = nowNs;
        Arrays.fill(count, j * ring, (j + 1) * ring, 0);
        Arrays.fill(latchRound, j * ring, (j + 1) * ring, NO_LATCH);
    }

    /** The ring entry of a job's round. */
    int entry(final int j, final int round) {
        return j * ring + Math.floorMod(round, ring);
    }

    /**
     * Counts a released chunk of a round; R advances over every consecutive fully released round
     * (their counters are reset so the entries can serve round + G).
     */
    void chunkReleased(final int j, final int round, final int chunksPerRound, final long nowNs) {
        count[entry(j, round)]++;
        while (count[entry(j, releasedRound[j] + 1)] == chunksPerRound) {
            passNext(j, nowNs);
        }
    }

    /** R moves up to {@code round}, as a data plane below released it: every round it passes, passed now. */
    void passTo(final int j, final int round, final long nowNs) {
        while (releasedRound[j] < round) {
            passNext(j, nowNs);
        }
    }

    /** R passes its next round now; the round's entry is reset to serve round + G. */
    private void passNext(final int j, final long nowNs) {
        final int next = releasedRound[j] + 1;
        count[entry(j, next)] = 0;
        ns[entry(j, next)] = nowNs;
        releasedRound[j] = next;
    }

    /**
     * When R passed a round, for the rounds R passed whose entries no later round took over
     * (R - G &lt; round &lt;= R); -1 for other rounds.
     */
    long releasedAtNs(final int j, final long round) {
        return tracks(j, round) ? ns[entry(j, (int) round)] : -1;
    }

    /** When R passed its current value; while no round is released, when the job was created. */
    long waitingSinceNs(final int j) {
        final int r = releasedRound[j];
        return r < 0 ? createdNs[j] : ns[entry(j, r)];
    }

    /** Whether the ring still holds when R passed the round (R - G &lt; round &lt;= R). */
    boolean tracks(final int j, final long round) {
        final int r = releasedRound[j];
        return round >= 0 && round <= r && round > r - ring;
    }

    /** Latches a round a timeout released a step of, holding the workers in {@code held} (W words at {@code h}). */
    void latch(final int j, final int round, final long[] held, final int h) {
        final int r = entry(j, round);
        final boolean fresh = latchRound[r] != round;
        latchRound[r] = round;
        for (int w = 0; w < words; w++) {
            latchBitmap[r * words + w] = fresh ? held[h + w] : latchBitmap[r * words + w] & held[h + w];
        }
    }

    /** Whether a step of the round timed out and {@code held} (W words at {@code h}) holds every worker that release held. */
    boolean latched(final int j, final int round, final long[] held, final int h) {
        final int r = entry(j, round);
        if (latchRound[r] != round) {
            return false;
        }
        for (int w = 0; w < words; w++) {
            final long need = latchBitmap[r * words + w];
            if ((held[h + w] & need) != need) {
                return false;
            }
        }
        return true;
    }
}
