package io.serene.dataplane;

import io.serene.protocol.JobKeys;
import io.serene.protocol.sync.SyncConfig;

/**
 * Configuration of a switch: fluent setters, validated once by {@link #conclude()}, which also
 * derives the slot pool size from the byte budget (see {@link SwitchMemory}).
 */
public final class SwitchContext {
    public static final long DEFAULT_BUDGET_BYTES = 16L << 20;
    public static final int DEFAULT_MAX_JOBS = 4;
    public static final int DEFAULT_MAX_WORKERS = 64;
    public static final int DEFAULT_CHUNK_ELEMENTS = 256;
    /** A job's lease by default, in seconds (text, for command-line defaults too): five minutes without a packet from its workers. */
    public static final String DEFAULT_JOB_LEASE_TEXT = "300";
    public static final int DEFAULT_ROUND_RING = 64;
    /** The pool index is a 16-bit header field. */
    public static final int MAX_POOL_SIZE = 65535;
    /** The most workers a job may have (a worker id is 16 bits on the wire). */
    public static final int MAX_WORKERS = 65535;
    /** A RESULT must fit one UDP datagram. */
    public static final int MAX_CHUNK_ELEMENTS = 8192;

    private long budgetBytes = DEFAULT_BUDGET_BYTES;
    private int maxJobs = DEFAULT_MAX_JOBS;
    private int maxWorkers = DEFAULT_MAX_WORKERS;
    private int chunkElements = DEFAULT_CHUNK_ELEMENTS;
    private int roundRing = DEFAULT_ROUND_RING;
    private int maxPoolSize = MAX_POOL_SIZE;
    private SyncConfig defaultSync = SyncConfig.asp();
    private long jobLeaseNs = Long.parseLong(DEFAULT_JOB_LEASE_TEXT) * 1_000_000_000L;
    private byte[] secret;
    private int[] defaultGroups = new int[0];
    private final SyncConfig[] groupSync = new SyncConfig[ConfigTable.GROUPS];
    private SwitchMemory memory;

    public SwitchContext budgetBytes(final long bytes) {
        this.budgetBytes = bytes;
        return this;
    }

    public SwitchContext maxJobs(final int jobs) {
        this.maxJobs = jobs;
        return this;
    }

    public SwitchContext maxWorkers(final int workers) {
        this.maxWorkers = workers;
        return this;
    }

    public SwitchContext chunkElements(final int elements) {
        this.chunkElements = elements;
        return this;
    }

    /** Ring of per-round release counters: how many rounds past R the switch tracks (s_max + 2). */
    public SwitchContext roundRing(final int rounds) {
        this.roundRing = rounds;
        return this;
    }

    /** Caps the pool below what the budget allows (small pools exercise slot reuse in tests). */
    public SwitchContext maxPoolSize(final int slots) {
        this.maxPoolSize = slots;
        return this;
    }

    /**
     * The sync config every new job starts with, from round 0 (default {@code asp}: every chunk
     * waits for every worker, and workers are held back only by the release ring).
     */
    public SwitchContext defaultSync(final SyncConfig config) {
        this.defaultSync = config == null ? null : config.requireAbsolute();
        return this;
    }

    public SyncConfig defaultSync() {
        return defaultSync;
    }

    /**
     * The worker_group entries every new job starts with: worker w in group {@code groupOf[w]}
     * (workers past the array, and 0 entries, in group 0), as if written before its first round.
     */
    public SwitchContext defaultGroups(final int... groupOf) {
        for (final int g : groupOf) {
            require(g >= 0 && g < ConfigTable.GROUPS, "worker groups are 0.." + (ConfigTable.GROUPS - 1) + ", was " + g);
        }
        this.defaultGroups = groupOf.clone();
        return this;
    }

    /** The config a group's entries start with in every new job (default: {@link #defaultSync}). */
    public SwitchContext groupSync(final int group, final SyncConfig config) {
        require(group >= 0 && group < ConfigTable.GROUPS, "worker groups are 0.." + (ConfigTable.GROUPS - 1) + ", was " + group);
        groupSync[group] = config == null ? null : config.requireAbsolute();
        return this;
    }

    int[] defaultGroups() {
        return defaultGroups.clone();
    }

    /** The config group {@code group}'s entries start with. */
    public SyncConfig groupSync(final int group) {
        return groupSync[group] == null ? defaultSync : groupSync[group];
    }

    /**
     * A job none of whose joined workers sent anything for this long is freed (its table entry
     * serves another job; counted, JOBS_EXPIRED), so JOINs that no worker follows cannot fill the
     * job table for good. Default {@link #DEFAULT_JOB_LEASE_TEXT} s; 0: jobs live until their workers leave.
     */
    public SwitchContext jobLeaseNs(final long ns) {
        this.jobLeaseNs = ns;
        return this;
    }

    /**
     * The secret every job's keys derive from ({@link JobKeys}): each worker's packets must then carry
     * its MAC, and the switch signs its own. Null (the default): nothing is signed or checked.
     */
    public SwitchContext secret(final byte[] value) {
        this.secret = value == null ? null : value.clone();
        return this;
    }

    public byte[] secret() {
        return secret == null ? null : secret.clone();
    }

    public long jobLeaseNs() {
        return jobLeaseNs;
    }

    public long budgetBytes() {
        return budgetBytes;
    }

    public int maxJobs() {
        return maxJobs;
    }

    public int maxWorkers() {
        return maxWorkers;
    }

    public int chunkElements() {
        return chunkElements;
    }

    public int roundRing() {
        return roundRing;
    }

    /** The memory plan; available after {@link #conclude()}. */
    public SwitchMemory memory() {
        if (memory == null) {
            throw new IllegalStateException("conclude() first");
        }
        return memory;
    }

    /** Validates every setting and derives the pool size; throws naming the bad setting. */
    public SwitchContext conclude() {
        require(maxJobs >= 1 && maxJobs <= 4096, "maxJobs must be in 1..4096, was " + maxJobs);
        require(maxWorkers >= 1 && maxWorkers <= MAX_WORKERS, "maxWorkers must be in 1.." + MAX_WORKERS + ", was " + maxWorkers);
        require(chunkElements >= 1 && chunkElements <= MAX_CHUNK_ELEMENTS,
            "chunkElements must be in 1.." + MAX_CHUNK_ELEMENTS + ", was " + chunkElements);
        require(roundRing >= 2 && roundRing <= 1 << 20, "roundRing must be in 2..1048576, was " + roundRing);
        require(secret == null || secret.length >= JobKeys.MIN_SECRET_BYTES, "secret must have at least " + JobKeys.MIN_SECRET_BYTES
            + " bytes, had " + (secret == null ? 0 : secret.length));
        require(jobLeaseNs >= 0, "jobLeaseNs must be >= 0 (0: never), was " + jobLeaseNs);
        require(maxPoolSize >= 1 && maxPoolSize <= MAX_POOL_SIZE,
            "maxPoolSize must be in 1.." + MAX_POOL_SIZE + ", was " + maxPoolSize);
        final long fixed = SwitchMemory.fixedBytes(maxJobs, maxWorkers, roundRing, chunkElements);
        final long perSlot = SwitchMemory.slotBytes(maxWorkers, chunkElements);
        final long minimum = fixed + 2L * maxJobs * perSlot;
        require(budgetBytes >= minimum, "budgetBytes " + budgetBytes + " is below the minimum " + minimum
            + " for maxJobs=" + maxJobs + ", maxWorkers=" + maxWorkers + ", chunkElements=" + chunkElements
            + " (one slot per shadow set per job)");
        final long slots = (budgetBytes - fixed) / (2L * maxJobs * perSlot);
        final int poolSize = (int) Math.min(slots, maxPoolSize);
        memory = new SwitchMemory(this, poolSize);
        return this;
    }

    private static void require(final boolean ok, final String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
