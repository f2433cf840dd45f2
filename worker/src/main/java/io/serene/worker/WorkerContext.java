package io.serene.worker;

import io.serene.protocol.JobKeys;
import io.serene.transport.LinkModel;
import io.serene.protocol.JoinPacket;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/** Configuration of one worker engine: fluent setters, validated by {@link #conclude()}. */
public final class WorkerContext {
    /**
     * This process's incarnation: the microseconds since the epoch when the JVM loaded this class, so
     * a worker process started later (a restart) has a larger one.
     */
    public static final long PROCESS_INCARNATION = ChronoUnit.MICROS.between(Instant.EPOCH, Instant.now());
    private int jobId = 1;
    private long incarnation = PROCESS_INCARNATION;
    private JobKeys.WorkerKey key;
    /** Each worker's packet numbers in this process ((job, worker) -> the next), shared by every engine that worker runs. */
    private static final ConcurrentHashMap<Long, AtomicLong> PACKET_NUMBERS = new ConcurrentHashMap<>();
    private Supplier<int[]> rebuildOffers;
    private int workerId = -1;
    private int workers = -1;
    private int elementsPerRound = -1;
    private int switchPort = 0;
    private long initialRtoNs = 20_000_000L;
    private long minRtoNs = 500_000L;
    private long maxRtoNs = 500_000_000L;
    private long joinRetryNs = 100_000_000L;
    private int maxJoinAttempts = 50;
    private int maxWindow = Integer.MAX_VALUE;
    private LinkModel link = LinkModel.NONE;

    public WorkerContext jobId(final int id) {
        this.jobId = id;
        return this;
    }

    /**
     * The worker's incarnation, carried by its JOINs (default {@link #PROCESS_INCARNATION}): the
     * switch refuses FENCED a JOIN of an older incarnation than one that joined as this worker.
     */
    public WorkerContext incarnation(final long value) {
        this.incarnation = value;
        return this;
    }

    public long incarnation() {
        return incarnation;
    }

    /**
     * The worker's key ({@link JobKeys}): its packets are signed with it, and the switch's packets
     * must carry the job's reply MAC. Null (the default): a job without a secret.
     */
    public WorkerContext key(final JobKeys.WorkerKey value) {
        this.key = value;
        return this;
    }

    public JobKeys.WorkerKey key() {
        return key;
    }

    /**
     * Where this worker's packet numbers come from: one counter per job and worker in this process,
     * so an engine built anew (a job joined again) goes on above the numbers the switch has seen; it
     * starts at this process's incarnation x 1024, so a restarted process starts above the last one's.
     */
    AtomicLong packetNumbers() {
        return PACKET_NUMBERS.computeIfAbsent(((long) jobId << 32) | (workerId & 0xFFFFFFFFL),
            k -> new AtomicLong(PROCESS_INCARNATION << 10));
    }

    /**
     * Join by rebuilding the job from checkpoints: the rounds (rounds done) this worker can go on
     * after, at most {@link JoinPacket#MAX_OFFERS}; the switch forms the job once every worker joined
     * and names the round it goes on after ({@link WorkerEngine#firstRound}). Null (the default): a
     * plain JOIN.
     */
    public WorkerContext rebuild(final int... offers) {
        final int[] fixed = offers == null ? null : offers.clone();
        return rebuild(fixed == null ? null : () -> fixed);
    }

    /**
     * {@link #rebuild(int...)} with the offers read anew for every JOIN (checkpoints on disk come and
     * go while a rebuilt job waits for its workers).
     */
    public WorkerContext rebuild(final Supplier<int[]> offers) {
        this.rebuildOffers = offers;
        return this;
    }

    /** The rounds a REBUILD JOIN offers now, or null for a plain JOIN. */
    public int[] rebuildOffers() {
        if (rebuildOffers == null) {
            return null;
        }
        final int[] offers = rebuildOffers.get();
        if (offers.length > JoinPacket.MAX_OFFERS) {
            throw new IllegalArgumentException("at most " + JoinPacket.MAX_OFFERS + " rounds to offer, got " + offers.length);
        }
        return offers.clone();
    }

    public WorkerContext workerId(final int id) {
        this.workerId = id;
        return this;
    }

    public WorkerContext workers(final int count) {
        this.workers = count;
        return this;
    }

    public WorkerContext elementsPerRound(final int elements) {
        this.elementsPerRound = elements;
        return this;
    }

    /** The outbox port that reaches the switch. */
    public WorkerContext switchPort(final int port) {
        this.switchPort = port;
        return this;
    }

    /** Retransmission timeout before the first round-trip sample. */
    public WorkerContext initialRtoNs(final long ns) {
        this.initialRtoNs = ns;
        return this;
    }

    public WorkerContext minRtoNs(final long ns) {
        this.minRtoNs = ns;
        return this;
    }

    public WorkerContext maxRtoNs(final long ns) {
        this.maxRtoNs = ns;
        return this;
    }

    public WorkerContext joinRetryNs(final long ns) {
        this.joinRetryNs = ns;
        return this;
    }

    public WorkerContext maxJoinAttempts(final int attempts) {
        this.maxJoinAttempts = attempts;
        return this;
    }

    /** Limits the steps in flight below the switch's pool size. */
    public WorkerContext maxWindow(final int steps) {
        this.maxWindow = steps;
        return this;
    }

    /** A modelled access link to the switch, paced in user space ({@link LinkModel#NONE}: the host's own). */
    public WorkerContext link(final LinkModel value) {
        this.link = value;
        return this;
    }

    public LinkModel link() {
        return link;
    }

    public int jobId() {
        return jobId;
    }

    public int workerId() {
        return workerId;
    }

    public int workers() {
        return workers;
    }

    public int elementsPerRound() {
        return elementsPerRound;
    }

    public int switchPort() {
        return switchPort;
    }

    public long initialRtoNs() {
        return initialRtoNs;
    }

    public long minRtoNs() {
        return minRtoNs;
    }

    public long maxRtoNs() {
        return maxRtoNs;
    }

    public long joinRetryNs() {
        return joinRetryNs;
    }

    public int maxJoinAttempts() {
        return maxJoinAttempts;
    }

    public int maxWindow() {
        return maxWindow;
    }

    public WorkerContext conclude() {
        require(workers >= 1 && workers <= 65535, "workers must be in 1..65535, was " + workers);
        require(workerId >= 0 && workerId < workers, "workerId must be in 0.." + (workers - 1) + ", was " + workerId);
        require(elementsPerRound >= 1, "elementsPerRound must be >= 1, was " + elementsPerRound);
        require(minRtoNs > 0 && minRtoNs <= maxRtoNs, "minRtoNs must be in 1..maxRtoNs, was " + minRtoNs);
        require(initialRtoNs >= minRtoNs && initialRtoNs <= maxRtoNs,
            "initialRtoNs must be in minRtoNs..maxRtoNs, was " + initialRtoNs);
        require(joinRetryNs > 0, "joinRetryNs must be > 0, was " + joinRetryNs);
        require(maxJoinAttempts >= 1, "maxJoinAttempts must be >= 1, was " + maxJoinAttempts);
        require(maxWindow >= 1, "maxWindow must be >= 1, was " + maxWindow);
        require(link != null, "link must be set (LinkModel.NONE: none)");
        return this;
    }

    private static void require(final boolean ok, final String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
