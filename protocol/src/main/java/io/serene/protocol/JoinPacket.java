package io.serene.protocol;

/**
 * JOIN, worker to switch, and JOIN_ACK, switch to worker. JOIN's body is the job's shape (worker
 * count, elements per round) and, with flag REBUILD, the rounds (rounds done, -1: none) the worker
 * can go on after, from its checkpoints, then the worker's incarnation (a restarted worker's is larger:
 * the switch fences the older ones, status FENCED); JOIN_ACK repeats the shape and adds the switch's pool
 * parameters (pool size, chunk elements, round ring, most workers per job), with the job's first
 * round (the run's round its round 0 is) in the header's round field. A refused JOIN_ACK names why
 * in its status; PENDING: a rebuilt job waits for its other workers' JOINs.
 */
public final class JoinPacket extends Packet<JoinPacket> {
    public static final int WORKER_COUNT_OFFSET = HEADER_LENGTH;
    public static final int ELEMENTS_PER_ROUND_OFFSET = HEADER_LENGTH + 4;
    public static final int OFFERS_OFFSET = HEADER_LENGTH + 8;
    /** Rounds a REBUILD JOIN offers at most. */
    public static final int MAX_OFFERS = 4;
    /** The worker's incarnation (int64): a process started later has a larger one. */
    public static final int INCARNATION_OFFSET = HEADER_LENGTH + 8 + 4 * MAX_OFFERS;
    public static final int LENGTH = INCARNATION_OFFSET + 8;
    public static final int POOL_SIZE_OFFSET = HEADER_LENGTH + 8;
    public static final int CHUNK_ELEMENTS_OFFSET = HEADER_LENGTH + 12;
    public static final int ROUND_RING_OFFSET = HEADER_LENGTH + 16;
    public static final int MAX_WORKERS_OFFSET = HEADER_LENGTH + 20;
    public static final int ACK_LENGTH = HEADER_LENGTH + 24;

    @Override
    protected JoinPacket self() {
        return this;
    }

    public int workerCount() {
        return buffer.getInt(offset + WORKER_COUNT_OFFSET);
    }

    public JoinPacket workerCount(final int count) {
        buffer.putInt(offset + WORKER_COUNT_OFFSET, count);
        return this;
    }

    public int elementsPerRound() {
        return buffer.getInt(offset + ELEMENTS_PER_ROUND_OFFSET);
    }

    public JoinPacket elementsPerRound(final int elements) {
        buffer.putInt(offset + ELEMENTS_PER_ROUND_OFFSET, elements);
        return this;
    }

    public long incarnation() {
        return buffer.getLong(offset + INCARNATION_OFFSET);
    }

    public JoinPacket incarnation(final long incarnation) {
        buffer.putLong(offset + INCARNATION_OFFSET, incarnation);
        return this;
    }

    /** Offer i of a REBUILD JOIN: rounds done after which the worker holds its state, or -1. */
    public int offer(final int i) {
        return buffer.getInt(offset + OFFERS_OFFSET + 4 * i);
    }

    public JoinPacket offer(final int i, final int roundsDone) {
        buffer.putInt(offset + OFFERS_OFFSET + 4 * i, roundsDone);
        return this;
    }

    public int poolSize() {
        return buffer.getInt(offset + POOL_SIZE_OFFSET);
    }

    public JoinPacket poolSize(final int size) {
        buffer.putInt(offset + POOL_SIZE_OFFSET, size);
        return this;
    }

    public int chunkElements() {
        return buffer.getInt(offset + CHUNK_ELEMENTS_OFFSET);
    }

    public JoinPacket chunkElements(final int elements) {
        buffer.putInt(offset + CHUNK_ELEMENTS_OFFSET, elements);
        return this;
    }

    public int roundRing() {
        return buffer.getInt(offset + ROUND_RING_OFFSET);
    }

    public JoinPacket roundRing(final int ring) {
        buffer.putInt(offset + ROUND_RING_OFFSET, ring);
        return this;
    }

    public int maxWorkers() {
        return buffer.getInt(offset + MAX_WORKERS_OFFSET);
    }

    public JoinPacket maxWorkers(final int workers) {
        buffer.putInt(offset + MAX_WORKERS_OFFSET, workers);
        return this;
    }
}
