package io.serene.dataplane;

import io.serene.protocol.JoinPacket;
import io.serene.protocol.ResultPacket;

/**
 * The switch's memory plan, fixed at start from a byte budget. With J jobs, N workers per job,
 * K elements per chunk, W = ceil(N / 64) bitmap words, G round-ring entries and P slots per
 * shadow set:
 *
 * <pre>
 *   slot bytes  = 4K (int32 sums) + 8W (contributor bitmap) + 39 (seq 8, first contribution
 *                 time 8, count 4, round 4, chunk 4, length 4, exponent 1, released 1, flags 1,
 *                 config entry per worker group 1 x 4)
 *   fixed bytes = J * (145N (port 4, clock 4, arrival round 4, finished round 4, its time 8, iteration
 *                           estimate 8, arrival offset 8, finished compute and offset 8 each,
 *                           incarnation 8, worker group 1, the rounds its REBUILD JOIN offered 4 x 4,
 *                           its key 16, replay window 8 + 32, last JOIN's number 8)
 *                      + 56W (joined bitmap, late set, explicit worker_group entries, members of 4 groups)
 *                      + (16 + 8W)G (release counters 4, release times 8, timeout latch: round 4,
 *                                   contributor bitmap 8W)
 *                      + 92 (id, workers, elements, chunks, value limit, R, config epoch, groups
 *                            in use, first round, rebuild's initiator and its JOINs, newest round a data
 *                            plane below opened: 4 each; open seq 8,
 *                            creation time 8, last heard 8, reply key 16; active, started, configs
 *                            changed, forming: 1 each))
 *                 + 9T (job hash table: T = smallest power of two >= 2J; key 4, value 4, used 1)
 *                 + 80 + 16W + 8K (the result being composed, its header and fields to the bitmap 80 bytes,
 *                                  and one contribution's values)
 *                 + 16W (the release rule's scratch: a group's required members, PSP's sample)
 *                 + J * 4 * (8 * (25 + 8W) + 8) (sync-config table: 4 groups x 8 entries per job)
 *   total       = fixed + J * 2 * P * slot bytes  &lt;= budget
 * </pre>
 *
 * P is the largest pool that fits the budget (capped at 65535). Nothing here depends on the
 * model size or the run length.
 */
public final class SwitchMemory {
    static final int SLOT_SCALAR_BYTES = 35 + ConfigTable.GROUPS;
    static final int JOB_SCALAR_BYTES = 92;

    /** The limits the plan is made for, kept by the context alone. */
    private final SwitchContext limits;
    private final int poolSize;

    SwitchMemory(final SwitchContext limits, final int poolSize) {
        this.limits = limits;
        this.poolSize = poolSize;
    }

    public static int bitmapWords(final int maxWorkers) {
        return (maxWorkers + 63) >>> 6;
    }

    public static long slotBytes(final int maxWorkers, final int chunkElements) {
        return 4L * chunkElements + 8L * bitmapWords(maxWorkers) + SLOT_SCALAR_BYTES;
    }

    public static long fixedBytes(final int maxJobs, final int maxWorkers, final int roundRing, final int chunkElements) {
        final int words = bitmapWords(maxWorkers);
        // per worker: port, clock, arrival round, finished round (4 B each); arrival, compute estimate,
        // arrival offset, finished compute time and offset, incarnation (8 B each); its group (1 B); its offers;
        // its key, replay window and last JOIN's number (SwitchAuth)
        final long perWorker = 65L + 4L * JoinPacket.MAX_OFFERS + SwitchAuth.WORKER_BYTES;
        return (long) maxJobs * (perWorker * maxWorkers + (24L + 8L * ConfigTable.GROUPS) * words + (16L + 8L * words) * roundRing
            + JOB_SCALAR_BYTES)
            + 9L * JobTable.length(maxJobs)
            + ResultPacket.BITMAP_OFFSET + 32L * words + 8L * chunkElements
            + ConfigTable.bytes(maxJobs, words);
    }

    public long budgetBytes() {
        return limits.budgetBytes();
    }

    public int maxJobs() {
        return limits.maxJobs();
    }

    public int maxWorkers() {
        return limits.maxWorkers();
    }

    public int chunkElements() {
        return limits.chunkElements();
    }

    public int roundRing() {
        return limits.roundRing();
    }

    public int poolSize() {
        return poolSize;
    }

    public int bitmapWords() {
        return bitmapWords(maxWorkers());
    }

    /** Bytes the plan uses (always at most the budget). */
    public long totalBytes() {
        return fixedBytes(maxJobs(), maxWorkers(), roundRing(), chunkElements())
            + 2L * maxJobs() * poolSize * slotBytes(maxWorkers(), chunkElements());
    }

    @Override
    public String toString() {
        return "switch memory: " + totalBytes() + " of " + budgetBytes() + " budget bytes = fixed "
            + fixedBytes(maxJobs(), maxWorkers(), roundRing(), chunkElements()) + " + " + maxJobs() + " jobs x 2 shadow sets x "
            + poolSize + " slots x " + slotBytes(maxWorkers(), chunkElements()) + " B/slot (K=" + chunkElements()
            + " elements, N<=" + maxWorkers() + " workers, ring=" + roundRing() + " rounds)";
    }
}
