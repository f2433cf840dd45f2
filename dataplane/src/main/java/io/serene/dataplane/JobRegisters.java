package io.serene.dataplane;

import io.serene.protocol.JoinPacket;

import java.util.Arrays;

/**
 * Per-job and per-worker registers: the job's shape, its joined workers and where they joined
 * from, each worker's clock, the late set, the config epoch, and when each worker's newest round
 * arrived with the compute time estimated for it. Job index j, worker index {@code j * N + w},
 * bitmap words at {@code j * W}. Preallocated; written by the switch thread only.
 */
final class JobRegisters {
    static final long NO_ARRIVAL = Long.MIN_VALUE;

    private final int maxWorkers;
    private final int words;

    final boolean[] active;
    final int[] id;
    final int[] workers;
    final int[] elementsPerRound;
    final int[] chunksPerRound;
    /** 2^Q, the scale a correct worker's values lie within. */
    final int[] valueLimit;
    /** The job's lowest step not yet released. */
    final long[] openSeq;
    /** [job]: when a joined worker of the job was last heard (JOIN, DATA, CONFIG_REQUEST), for the job's lease. */
    final long[] lastHeardNs;
    /** [job]: whether the job is being rebuilt: formed once every worker's REBUILD JOIN is in. */
    final boolean[] forming;
    /** [job]: the run's round the job's round 0 is (0, or the checkpoint a rebuilt job goes on after). */
    final int[] firstRound;
    /** [job * N + w][MAX_OFFERS]: the rounds worker w's REBUILD JOIN offered (-1: none). */
    final int[] offers;
    /** Per worker: the newest incarnation that joined (JOINs of older ones are fenced); NO_INCARNATION before any. */
    final long[] incarnation;
    /** Per job being formed anew: the worker whose REBUILD JOIN began it (-1: none), and how many JOINs it sent since. */
    final int[] initiator;
    final int[] initiatorJoins;
    static final long NO_INCARNATION = Long.MIN_VALUE;
    /** Bumped by every table write; stamped on every result. */
    final int[] epoch;
    /** Whether a worker contributed (group membership is fixed from then on). */
    final boolean[] started;
    /** Whether the job's tables changed since they were last announced. */
    final boolean[] configDirty;
    final long[] joined;
    /**
     * Workers a timeout released a step without, not waited for by later steps under a timeout
     * config until a contribution of theirs is counted again (the late set).
     */
    final long[] late;
    final int[] workerPort;
    final int[] workerClock;
    /** Each worker's newest round with a packet here, when its first packet came, and its estimated compute time. */
    final int[] arrivalRound;
    final long[] arrivalNs;
    final long[] iterationNs;
    /**
     * Each worker's arrival offset in its newest round so far: the most any of its packets of the
     * round came after the first packet of the same step from any worker (what a timeout compares).
     */
    final long[] offsetNs;
    /**
     * Each worker's last round before its newest (-1: none yet), with its compute time and its
     * arrival offset there, complete: the pair the auto policy's model reads (one round old).
     */
    final int[] finishedRound;
    final long[] finishedComputeNs;
    final long[] finishedOffsetNs;
    /** The newest round a data plane below let a DATA packet open, as last read there (-1: none, or no data plane below). */
    final int[] openedBelow;

    JobRegisters(final int maxJobs, final int maxWorkers, final int words) {
        this.maxWorkers = maxWorkers;
        this.words = words;
        active = new boolean[maxJobs];
        id = new int[maxJobs];
        workers = new int[maxJobs];
        elementsPerRound = new int[maxJobs];
        chunksPerRound = new int[maxJobs];
        valueLimit = new int[maxJobs];
        openSeq = new long[maxJobs];
        lastHeardNs = new long[maxJobs];
        forming = new boolean[maxJobs];
        firstRound = new int[maxJobs];
        offers = new int[maxJobs * maxWorkers * JoinPacket.MAX_OFFERS];
        incarnation = new long[maxJobs * maxWorkers];
        initiator = new int[maxJobs];
        initiatorJoins = new int[maxJobs];
        epoch = new int[maxJobs];
        started = new boolean[maxJobs];
        configDirty = new boolean[maxJobs];
        joined = new long[maxJobs * words];
        late = new long[maxJobs * words];
        workerPort = new int[maxJobs * maxWorkers];
        workerClock = new int[maxJobs * maxWorkers];
        arrivalRound = new int[maxJobs * maxWorkers];
        arrivalNs = new long[maxJobs * maxWorkers];
        iterationNs = new long[maxJobs * maxWorkers];
        offsetNs = new long[maxJobs * maxWorkers];
        finishedRound = new int[maxJobs * maxWorkers];
        finishedComputeNs = new long[maxJobs * maxWorkers];
        finishedOffsetNs = new long[maxJobs * maxWorkers];
        openedBelow = new int[maxJobs];
    }

    long bytes() {
        return active.length + started.length + configDirty.length + forming.length
            + 4L * (id.length + workers.length + elementsPerRound.length + chunksPerRound.length + valueLimit.length + epoch.length
                + firstRound.length + offers.length)
            + 8L * openSeq.length + 8L * lastHeardNs.length + 8L * (joined.length + late.length)
            + 4L * (workerPort.length + workerClock.length + arrivalRound.length + finishedRound.length)
            + 8L * (arrivalNs.length + iterationNs.length + offsetNs.length + finishedComputeNs.length + finishedOffsetNs.length
                + incarnation.length)
            + 4L * (initiator.length + initiatorJoins.length + openedBelow.length);
    }

    /** A new job's registers. */
    void reset(final int j, final int job, final int jobWorkers, final int elements, final int chunks) {
        active[j] = true;
        id[j] = job;
        forming[j] = false;
        firstRound[j] = 0;
        Arrays.fill(offers, j * maxWorkers * JoinPacket.MAX_OFFERS, (j + 1) * maxWorkers * JoinPacket.MAX_OFFERS, -1);
        workers[j] = jobWorkers;
        elementsPerRound[j] = elements;
        chunksPerRound[j] = chunks;
        valueLimit[j] = 1 << (30 - (32 - Integer.numberOfLeadingZeros(jobWorkers - 1)));
        openSeq[j] = 0;
        epoch[j] = 0;
        started[j] = false;
        Arrays.fill(joined, j * words, (j + 1) * words, 0L);
        Arrays.fill(late, j * words, (j + 1) * words, 0L);
        Arrays.fill(workerClock, j * maxWorkers, (j + 1) * maxWorkers, -1);
        Arrays.fill(arrivalRound, j * maxWorkers, (j + 1) * maxWorkers, -1);
        Arrays.fill(arrivalNs, j * maxWorkers, (j + 1) * maxWorkers, NO_ARRIVAL);
        Arrays.fill(iterationNs, j * maxWorkers, (j + 1) * maxWorkers, 0L);
        Arrays.fill(offsetNs, j * maxWorkers, (j + 1) * maxWorkers, 0L);
        Arrays.fill(finishedRound, j * maxWorkers, (j + 1) * maxWorkers, -1);
        Arrays.fill(finishedComputeNs, j * maxWorkers, (j + 1) * maxWorkers, 0L);
        Arrays.fill(finishedOffsetNs, j * maxWorkers, (j + 1) * maxWorkers, 0L);
        openedBelow[j] = -1;
        Arrays.fill(workerPort, j * maxWorkers, (j + 1) * maxWorkers, -1);
        Arrays.fill(incarnation, j * maxWorkers, (j + 1) * maxWorkers, NO_INCARNATION);
        initiator[j] = -1;
        initiatorJoins[j] = 0;
    }

    /** The index of worker w of job j in the per-worker registers. */
    int worker(final int j, final int w) {
        return j * maxWorkers + w;
    }

    /** Whether every worker of job j is joined. */
    boolean allJoined(final int j) {
        int n = 0;
        for (int i = 0; i < words; i++) {
            n += Long.bitCount(joined[j * words + i]);
        }
        return n == workers[j];
    }

    /** Records the rounds worker w's REBUILD JOIN offered (-1 for none). */
    void offer(final int j, final int w, final int i, final int roundsDone) {
        offers[worker(j, w) * JoinPacket.MAX_OFFERS + i] = roundsDone;
    }

    /**
     * The most rounds done that every worker of job j offered to go on after; 0 (from the start, which
     * every worker can make again from its seed) if they share no other.
     */
    int commonOffer(final int j) {
        int best = 0;
        for (int i = 0; i < JoinPacket.MAX_OFFERS; i++) {
            final int candidate = offers[worker(j, 0) * JoinPacket.MAX_OFFERS + i];
            if (candidate <= best) {
                continue;
            }
            boolean everyone = true;
            for (int w = 1; w < workers[j] && everyone; w++) {
                boolean has = false;
                for (int k = 0; k < JoinPacket.MAX_OFFERS; k++) {
                    has |= offers[worker(j, w) * JoinPacket.MAX_OFFERS + k] == candidate;
                }
                everyone = has;
            }
            if (everyone) {
                best = candidate;
            }
        }
        return best;
    }

    boolean isJoined(final int j, final int w) {
        return (joined[j * words + (w >>> 6)] & (1L << (w & 63))) != 0;
    }

    /** Whether worker w of job j joined from an address other than {@code port} (a joined worker is bound to its address). */
    boolean joinedElsewhere(final int j, final int w, final int port) {
        return isJoined(j, w) && workerPort[worker(j, w)] != port;
    }

    /** Whether worker w of job j is joined from {@code port}. */
    boolean joinedFrom(final int j, final int w, final int port) {
        return isJoined(j, w) && workerPort[worker(j, w)] == port;
    }

    void join(final int j, final int w, final int port) {
        joined[j * words + (w >>> 6)] |= 1L << (w & 63);
        workerPort[worker(j, w)] = port;
    }

    /** Marks worker w left; true if no worker of the job is joined any more. */
    boolean leave(final int j, final int w) {
        joined[j * words + (w >>> 6)] &= ~(1L << (w & 63));
        boolean any = false;
        for (int i = 0; i < words; i++) {
            any |= joined[j * words + i] != 0;
        }
        return !any;
    }

    /** Whether the late set of the job is not empty. */
    boolean anyLate(final int j) {
        boolean any = false;
        for (int i = 0; i < words; i++) {
            any |= late[j * words + i] != 0;
        }
        return any;
    }

    /** The newest round any worker of the job sent a packet for (or a data plane below let open), -1 if none. */
    int newestArrival(final int j) {
        int newest = openedBelow[j];
        for (int w = 0; w < workers[j]; w++) {
            newest = Math.max(newest, arrivalRound[worker(j, w)]);
        }
        return newest;
    }
}
