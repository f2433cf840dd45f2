package io.serene.dataplane;

import io.serene.protocol.Counters;
import io.serene.protocol.Flags;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketCheck;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketFlyweight;
import io.serene.protocol.PacketType;
import io.serene.protocol.Status;
import io.serene.protocol.sync.StepLayout;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;

import java.nio.ByteBuffer;
import java.nio.IntBuffer;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The software switch's data plane, sans-IO: parser, job table, slot-pool aggregator with two
 * shadow sets and contributor bitmaps, clock and release-ring registers, and the deparser that
 * multicasts results. All state is preallocated by the constructor from {@link SwitchMemory};
 * one thread calls {@link #onPacket}; no allocation per packet.
 *
 * <pre>
 *   worker w, step seq:   slot = seq mod P, shadow set = (seq / P) mod 2
 *
 *   DATA --> parse/check --> job table --> slot (set, slot) --+--> new use? reset slot
 *                                                             +--> bitmap has w? duplicate
 *                                                             +--> add: sums, count, max exp
 *                                                                  count == N? release:
 *                                                                    RESULT multicast,
 *                                                                    release ring -> R
 * </pre>
 *
 * A slot of set s is reused for step seq only once step seq - P (the other set) is released:
 * a worker sends seq only after it received the result of seq - P, so every worker then holds
 * the result of seq - 2P, which is what the slot held (SwitchML's shadow-copy argument).
 */
public final class SwitchPipeline implements PacketEndpoint {
    private static final long NO_SEQ = -1L;
    private static final int NO_LATCH = Integer.MIN_VALUE;
    /** {@link #releasable}: not yet; by the config's rule, the round's latch or the late set; by the timeout alone. */
    private static final int NOT_DUE = 0;
    private static final int DUE = 1;
    private static final int DUE_BY_TIMEOUT = 2;
    private static final long NO_ARRIVAL = Long.MIN_VALUE;
    /** Slot flag kept in the switch only: a contribution lay outside the job's scale, so adds saturate. */
    private static final int OUT_OF_SCALE = 0x40;

    private final SwitchMemory memory;
    private final Counters<SwitchCounter> counters = new Counters<>(SwitchCounter.class);
    private final SwitchCommands commands = new SwitchCommands(this);
    private final SwitchContext context;
    private final Consumer<Throwable> errorHandler;
    private final PacketFlyweight in = new PacketFlyweight();
    private final PacketFlyweight out = new PacketFlyweight();
    private final ByteBuffer txBuffer;
    private final IntBuffer txInts;
    private final int[] scratch;
    private ByteBuffer viewSource;
    private IntBuffer view;

    private final int maxJobs;
    private final int maxWorkers;
    private final int poolSize;
    private final int chunkElements;
    private final int words;
    private final int ring;

    // job registers
    private final JobTable jobTable;
    private final boolean[] jobActive;
    private final int[] jobId;
    private final int[] jobWorkers;
    private final int[] jobElementsPerRound;
    private final int[] jobChunksPerRound;
    private final int[] jobValueLimit;
    private final long[] jobOpenSeq;
    private final int[] jobReleasedRound;
    private final long[] jobJoined;          // [job * W + word]
    /**
     * [job * W + word]: workers a timeout released a step without, not waited for by later steps
     * under a timeout config until a contribution of theirs is counted again (the late set).
     */
    private final long[] jobLate;
    private final int[] workerPort;          // [job * N + worker]
    private final int[] workerClock;         // [job * N + worker]
    private final int[] releaseCount;        // [job * G + round mod G]
    private final long[] releaseNs;          // [job * G + round mod G]: when R passed the round
    /**
     * The timeout latch, per release-ring entry: once one of a round's steps was released by its
     * timeout, the round's other steps are released as soon as they hold every worker that release
     * held (the intersection, if several timed out), instead of each waiting out its own timeout.
     */
    private final int[] latchRound;
    private final long[] latchBitmap;
    private final int[] workerArrivalRound;  // [job * N + worker]: its newest round with a packet here
    private final long[] workerArrivalNs;    // [job * N + worker]: first packet of that round
    private final long[] workerIterationNs;  // [job * N + worker]: estimated compute time of that round

    // sync configs and the timeout scanner (a model of a packet generator sweeping the pool)
    private final ConfigTable configs;       // one list per [job * GROUPS + group]
    private final int[] jobEpoch;            // [job]: bumped by every table write
    private final boolean[] jobStarted;      // [job]: a worker contributed (group membership is fixed from then on)
    private final byte[] workerGroup;        // [job * N + worker]: the worker_group table
    private final long[] workerGroupSet;     // [job * W + word]: workers with an explicit worker_group entry
    private final long[] groupMembers;       // [(job * GROUPS + group) * W + word]
    private final int[] jobGroups;           // [job]: bitmask of the groups with members
    private final int[] setupGroups;         // the context's worker_group entries for new jobs
    private long timeoutSweepNs = SyncConfig.NO_TIMEOUT;
    private int scanCursor;
    private long lastScanNs = Long.MIN_VALUE;
    private final boolean[] configDirty;
    private boolean configsChanged;

    // slot registers, index = (job * 2 + set) * P + slot
    private final long[] slotSeq;
    private final long[] slotFirstNs;
    private final byte[] slotEntry;          // [slotIndex * GROUPS + group]: the entry the slot opened under
    private final int[] slotCount;
    private final int[] slotRound;
    private final int[] slotChunk;
    private final int[] slotLength;
    private final byte[] slotExponent;
    private final boolean[] slotReleased;
    private final byte[] slotFlags;
    private final long[] slotBitmap;         // [slotIndex * W + word]
    private final int[] slotSums;            // [slotIndex * K + element]

    public SwitchPipeline(final SwitchContext context, final Consumer<Throwable> errorHandler) {
        this.context = context;
        this.memory = context.memory();
        this.errorHandler = errorHandler;
        this.maxJobs = memory.maxJobs();
        this.maxWorkers = memory.maxWorkers();
        this.poolSize = memory.poolSize();
        this.chunkElements = memory.chunkElements();
        this.words = memory.bitmapWords();
        this.ring = memory.roundRing();

        jobTable = new JobTable(maxJobs);
        configs = new ConfigTable(maxJobs, words);
        jobEpoch = new int[maxJobs];
        jobStarted = new boolean[maxJobs];
        workerGroup = new byte[maxJobs * maxWorkers];
        workerGroupSet = new long[maxJobs * words];
        groupMembers = new long[maxJobs * ConfigTable.GROUPS * words];
        jobGroups = new int[maxJobs];
        configDirty = new boolean[maxJobs];
        setupGroups = context.defaultGroups();
        jobActive = new boolean[maxJobs];
        jobId = new int[maxJobs];
        jobWorkers = new int[maxJobs];
        jobElementsPerRound = new int[maxJobs];
        jobChunksPerRound = new int[maxJobs];
        jobValueLimit = new int[maxJobs];
        jobOpenSeq = new long[maxJobs];
        jobReleasedRound = new int[maxJobs];
        jobJoined = new long[maxJobs * words];
        jobLate = new long[maxJobs * words];
        workerPort = new int[maxJobs * maxWorkers];
        workerClock = new int[maxJobs * maxWorkers];
        releaseCount = new int[maxJobs * ring];
        releaseNs = new long[maxJobs * ring];
        latchRound = new int[maxJobs * ring];
        Arrays.fill(latchRound, NO_LATCH);
        latchBitmap = new long[maxJobs * ring * words];
        workerArrivalRound = new int[maxJobs * maxWorkers];
        workerArrivalNs = new long[maxJobs * maxWorkers];
        workerIterationNs = new long[maxJobs * maxWorkers];

        final int slots = maxJobs * 2 * poolSize;
        slotSeq = new long[slots];
        slotFirstNs = new long[slots];
        slotEntry = new byte[slots * ConfigTable.GROUPS];
        slotCount = new int[slots];
        slotRound = new int[slots];
        slotChunk = new int[slots];
        slotLength = new int[slots];
        slotExponent = new byte[slots];
        slotReleased = new boolean[slots];
        slotFlags = new byte[slots];
        slotBitmap = new long[slots * words];
        slotSums = new int[slots * chunkElements];
        Arrays.fill(slotSeq, NO_SEQ);

        txBuffer = PacketFlyweight.allocate(Math.max(PacketFlyweight.resultLength(words, chunkElements),
            PacketFlyweight.configLength(words)));
        txInts = txBuffer.asIntBuffer();
        scratch = new int[chunkElements];
    }

    public SwitchMemory memory() {
        return memory;
    }

    /** Bytes of every array and buffer this pipeline allocated, counted from the arrays themselves. */
    public long allocatedBytes() {
        return jobTable.bytes()
            + jobActive.length + 4L * (jobId.length + jobWorkers.length + jobElementsPerRound.length
                + jobChunksPerRound.length + jobValueLimit.length + jobReleasedRound.length) + 8L * jobOpenSeq.length
            + 8L * (jobJoined.length + jobLate.length) + 4L * (workerPort.length + workerClock.length + workerArrivalRound.length + releaseCount.length)
            + 8L * (releaseNs.length + workerArrivalNs.length + workerIterationNs.length)
            + 4L * latchRound.length + 8L * latchBitmap.length
            + configs.bytes() + configDirty.length
            + 4L * jobEpoch.length + jobStarted.length + workerGroup.length + 8L * (workerGroupSet.length + groupMembers.length)
            + 4L * jobGroups.length
            + 8L * slotSeq.length + 8L * slotFirstNs.length + slotEntry.length
            + 4L * (slotCount.length + slotRound.length + slotChunk.length + slotLength.length)
            + slotExponent.length + slotReleased.length + slotFlags.length
            + 8L * slotBitmap.length + 4L * slotSums.length
            + txBuffer.capacity() + 4L * scratch.length;
    }

    public Counters<SwitchCounter> counters() {
        return counters;
    }

    /** Highest round R of the job such that every round up to R is released; -1 if none, or if the job is unknown. */
    public int releasedRound(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : jobReleasedRound[j];
    }

    /**
     * When R passed a round (the switch's clock, ns), for the rounds R passed whose ring entries no
     * later round took over (R - G &lt; round &lt;= R); -1 for other rounds or an unknown job.
     */
    public long releasedAtNs(final int job, final int round) {
        final int j = jobTable.get(job);
        if (j == JobTable.MISSING || round > jobReleasedRound[j] || round <= jobReleasedRound[j] - ring || round < 0) {
            return -1;
        }
        return releaseNs[j * ring + Math.floorMod(round, ring)];
    }

    /** The highest round worker w of the job contributed to; -1 if none or unknown. */
    public int clock(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker >= jobWorkers[j] ? -1 : workerClock[j * maxWorkers + worker];
    }

    /** The job's worker count; -1 if unknown. */
    public int workers(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : jobWorkers[j];
    }

    /** One row of a job's config table for telemetry: the group, the entry's first round, its value as text. */
    public record ConfigRow(int group, int firstRound, String rule) {
    }

    /**
     * The job's config table, per group with members (group 0 first), oldest entry first (for
     * telemetry and operators; allocates). Empty for an unknown job. Call on the switch's thread.
     */
    public java.util.List<ConfigRow> configEntries(final int job) {
        final java.util.List<ConfigRow> rows = new java.util.ArrayList<>();
        final int j = jobTable.get(job);
        if (j != JobTable.MISSING) {
            for (int g = 0; g < ConfigTable.GROUPS; g++) {
                if ((jobGroups[j] & (1 << g)) == 0) {
                    continue;
                }
                final int l = ConfigTable.list(j, g);
                for (int i = 0; i < configs.entries(l); i++) {
                    final int e = configs.at(l, i);
                    rows.add(new ConfigRow(g, configs.firstRound(l, e), configs.describe(l, e, groupMembers, l * words)));
                }
            }
        }
        return rows;
    }

    /** The group of a worker of the job (its worker_group entry, else group 0); -1 for an unknown job or worker. */
    public int group(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker < 0 || worker >= jobWorkers[j] ? -1 : workerGroup[j * maxWorkers + worker];
    }

    /**
     * Worker w's last compute time, as it reported it or the switch estimates it (see
     * {@code estimateIteration}); 0 before it is known, -1 for an unknown job or worker.
     */
    public long iterationNs(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker >= jobWorkers[j] ? -1 : workerIterationNs[j * maxWorkers + worker];
    }

    /** The context this switch was built from (its limits). */
    public SwitchContext context() {
        return context;
    }

    /** The single-writer command queue through which other threads write and read the tables. */
    public SwitchCommands commands() {
        return commands;
    }

    /**
     * Writes the {@code sync_config} or the {@code worker_group} table (switch thread; other threads
     * use {@link #commands()}). Returns OK; UNKNOWN_JOB; for sync_config: TOO_EARLY for a first
     * round below {@link #earliestSwapRound} (some worker may have started it), DUPLICATE_ENTRY for an
     * insert at a taken first round, NOT_FOUND for a modify or delete of a missing one, BAD_KEY for a
     * group out of range, a config that does not fit the group or a delete of the group's oldest
     * entry (it covers every earlier round), TABLE_FULL; for worker_group: TOO_EARLY once a worker
     * of the job has contributed (membership is fixed from then on), DUPLICATE_ENTRY, NOT_FOUND, and
     * BAD_KEY for a worker or group out of range or a membership some group's entries do not fit.
     */
    public Status write(final TableWrite write) {
        final Status status = write.entry() instanceof WorkerGroupEntry
            ? writeGroup(write.kind(), (WorkerGroupEntry) write.entry())
            : writeConfig(write.kind(), (SyncConfigEntry) write.entry());
        if (status == Status.OK) {
            configsWritten(jobTable.get(write.entry().job()));
        }
        return status;
    }

    private Status writeConfig(final TableWrite.Kind kind, final SyncConfigEntry entry) {
        final int j = jobTable.get(entry.job());
        if (j == JobTable.MISSING) {
            return Status.UNKNOWN_JOB;
        }
        if (entry.group() >= ConfigTable.GROUPS) {
            return Status.BAD_KEY;
        }
        if (entry.firstRound() < swapRound(j, entry.group())) {
            return Status.TOO_EARLY;
        }
        final int l = ConfigTable.list(j, entry.group());
        if (kind != TableWrite.Kind.DELETE && !fits(j, entry.group(), entry.config())) {
            return Status.BAD_KEY;
        }
        final int e = configs.find(l, entry.firstRound());
        switch (kind) {
            case INSERT:
                return e >= 0 ? Status.DUPLICATE_ENTRY
                    : configs.insert(l, entry.firstRound(), entry.config(), jobWorkers[j], jobReleasedRound[j]);
            case MODIFY:
                if (e < 0) {
                    return Status.NOT_FOUND;
                }
                configs.modify(l, e, entry.config(), jobWorkers[j]);
                return Status.OK;
            default:
                if (e < 0) {
                    return Status.NOT_FOUND;
                }
                final int position = configs.position(l, e);
                if (position == 0) {
                    return Status.BAD_KEY;
                }
                configs.delete(l, position);
                return Status.OK;
        }
    }

    /** Whether a config fits a group of the job: its excluded workers exist, its quorum fits the members. */
    private boolean fits(final int j, final int group, final SyncConfig config) {
        try {
            config.resolve(jobWorkers[j], members(j, group));
            return true;
        } catch (final IllegalArgumentException ex) {
            return false;
        }
    }

    private java.util.BitSet members(final int j, final int group) {
        final int base = ConfigTable.list(j, group) * words;
        return java.util.BitSet.valueOf(Arrays.copyOfRange(groupMembers, base, base + words));
    }

    private Status writeGroup(final TableWrite.Kind kind, final WorkerGroupEntry entry) {
        final int j = jobTable.get(entry.job());
        if (j == JobTable.MISSING) {
            return Status.UNKNOWN_JOB;
        }
        final int worker = entry.worker();
        if (worker >= jobWorkers[j] || (entry.hasValue() && entry.group() >= ConfigTable.GROUPS)) {
            return Status.BAD_KEY;
        }
        if (jobStarted[j]) {
            return Status.TOO_EARLY;
        }
        final int word = j * words + (worker >>> 6);
        final long bit = 1L << (worker & 63);
        final boolean set = (workerGroupSet[word] & bit) != 0;
        if (kind == TableWrite.Kind.INSERT && set) {
            return Status.DUPLICATE_ENTRY;
        }
        if (kind != TableWrite.Kind.INSERT && !set) {
            return Status.NOT_FOUND;
        }
        final int from = workerGroup[j * maxWorkers + worker];
        final int to = kind == TableWrite.Kind.DELETE ? WorkerGroupEntry.DEFAULT_GROUP : entry.group();
        moveWorker(j, worker, from, to);
        if (!groupsFit(j)) {
            moveWorker(j, worker, to, from);
            return Status.BAD_KEY;
        }
        if (kind == TableWrite.Kind.DELETE) {
            workerGroupSet[word] &= ~bit;
        } else {
            workerGroupSet[word] |= bit;
        }
        return Status.OK;
    }

    private void moveWorker(final int j, final int worker, final int from, final int to) {
        final long bit = 1L << (worker & 63);
        groupMembers[ConfigTable.list(j, from) * words + (worker >>> 6)] &= ~bit;
        groupMembers[ConfigTable.list(j, to) * words + (worker >>> 6)] |= bit;
        workerGroup[j * maxWorkers + worker] = (byte) to;
        int mask = 0;
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            for (int w = 0; w < words; w++) {
                if (groupMembers[ConfigTable.list(j, g) * words + w] != 0) {
                    mask |= 1 << g;
                }
            }
        }
        jobGroups[j] = mask;
    }

    /** Whether every entry of every group fits the group's current members. */
    private boolean groupsFit(final int j) {
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            final int l = ConfigTable.list(j, g);
            for (int i = 0; i < configs.entries(l); i++) {
                if (!fits(j, g, config(j, g, configs.at(l, i)))) {
                    return false;
                }
            }
        }
        return true;
    }

    /** After a write that took: counted, timeouts re-armed, the table announced to the job's workers. */
    private void configsWritten(final int j) {
        jobEpoch[j]++;
        counters.increment(SwitchCounter.CONFIG_INSTALLS);
        updateTimeoutSweep();
        // announced to the workers by the next timer call (the transport calls it after a task)
        configDirty[j] = true;
        configsChanged = true;
    }

    /**
     * The job's table entries: its worker_group entries (by worker), then its sync_config entries
     * per group with members, oldest first; empty for an unknown job (allocates; switch thread).
     */
    public java.util.List<TableEntry> entries(final int job) {
        final java.util.List<TableEntry> list = new java.util.ArrayList<>();
        final int j = jobTable.get(job);
        if (j == JobTable.MISSING) {
            return list;
        }
        for (int w = 0; w < jobWorkers[j]; w++) {
            if ((workerGroupSet[j * words + (w >>> 6)] & (1L << (w & 63))) != 0) {
                list.add(WorkerGroupEntry.builder().job(job).worker(w).group(workerGroup[j * maxWorkers + w]).build());
            }
        }
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if ((jobGroups[j] & (1 << g)) == 0) {
                continue;
            }
            final int l = ConfigTable.list(j, g);
            for (int i = 0; i < configs.entries(l); i++) {
                final int e = configs.at(l, i);
                list.add(SyncConfigEntry.builder().job(job).group(g).firstRound(configs.firstRound(l, e)).config(config(j, g, e)).build());
            }
        }
        return list;
    }

    /**
     * An entry's value as a sync config (normalized: the required set as exclusions of the job's
     * workers, the quorum if written).
     */
    private SyncConfig config(final int j, final int group, final int e) {
        final int l = ConfigTable.list(j, group);
        final long[] all = new long[words];
        for (int w = 0; w < jobWorkers[j]; w++) {
            all[w >>> 6] |= 1L << (w & 63);
        }
        final java.util.BitSet required = configs.required(l, e, all, 0);
        SyncConfig c = SyncConfig.bsp().withBound(configs.bound(l, e));
        if (required.isEmpty()) {
            c = c.requiringNone();
        } else {
            final java.util.BitSet excluded = new java.util.BitSet();
            excluded.set(0, jobWorkers[j]);
            excluded.andNot(required);
            if (!excluded.isEmpty()) {
                c = c.excluding(excluded);
            }
        }
        if (configs.writtenQuorum(l, e) != SyncConfig.QUORUM_OF_REQUIRED) {
            c = c.withQuorum(configs.writtenQuorum(l, e));
        }
        if (configs.timeoutNs(l, e) != SyncConfig.NO_TIMEOUT) {
            c = c.withTimeoutNs(configs.timeoutNs(l, e));
        }
        return c.withLateMode(configs.lateMode(l, e));
    }

    public int activeJobs() {
        return jobTable.size();
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox outbox) {
        counters.increment(SwitchCounter.PACKETS_IN);
        try {
            in.wrap(buffer, offset, length);
            final PacketCheck check = in.check();
            if (check != PacketCheck.OK) {
                counters.increment(dropCounter(check));
                return;
            }
            switch (in.type()) {
                case DATA:
                    onData(port, nowNs, outbox);
                    break;
                case JOIN:
                    onJoin(port, outbox);
                    break;
                case LEAVE:
                    onLeave(port, outbox);
                    break;
                case CONFIG_REQUEST:
                    onConfigRequest(port, outbox);
                    break;
                default:
                    counters.increment(SwitchCounter.DROP_UNEXPECTED_TYPE);
                    break;
            }
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
    }

    /**
     * The timeout scanner: like a packet generator walking the pool, each call visits the share of
     * all slots that the time since the last call allows (a full sweep per {@code timeoutSweepNs},
     * a quarter of the smallest timeout in force) and releases pending chunks whose timeout passed.
     */
    @Override
    public long onTimer(final long nowNs, final Outbox outbox) {
        try {
            commands.drain();
            announceConfigs(outbox);
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
        if (timeoutSweepNs == SyncConfig.NO_TIMEOUT) {
            return NO_DEADLINE;
        }
        try {
            final int slots = slotSeq.length;
            final long elapsed = lastScanNs == Long.MIN_VALUE ? timeoutSweepNs : Math.max(0, nowNs - lastScanNs);
            lastScanNs = nowNs;
            final long visits = Math.min(slots, elapsed >= timeoutSweepNs ? slots : elapsed * slots / timeoutSweepNs + 1);
            for (long v = 0; v < visits; v++) {
                final int idx = scanCursor;
                scanCursor = scanCursor + 1 == slots ? 0 : scanCursor + 1;
                if (slotSeq[idx] == NO_SEQ || slotReleased[idx] || slotCount[idx] == 0) {
                    continue;
                }
                final int j = idx / (2 * poolSize);
                if (jobActive[j]) {
                    releaseIfDue(j, idx, nowNs, outbox);
                }
            }
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
        return nowNs + Math.max(1, timeoutSweepNs / 16);
    }

    /**
     * The release condition: for every group with members, under the entry the slot opened with, its
     * required members and at least its quorum of members contributed, or its timeout passed since
     * the slot's first contribution (One group: the job's config, as DESIGN.md states it); or a step
     * of the slot's round timed out and the slot holds every worker that release held (the latch);
     * or, under timeout configs, it holds every joined worker no timeout left out since it last
     * contributed in time (the late set). {@link #DUE_BY_TIMEOUT} when only a timeout allows it.
     */
    private int releasable(final int j, final int idx, final long nowNs) {
        if (latched(j, idx) || onTimeWithoutTheLate(j, idx)) {
            return DUE;
        }
        boolean timedOut = false;
        final int groups = jobGroups[j];
        final boolean single = groups == 1;
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if ((groups & (1 << g)) == 0) {
                continue;
            }
            final int l = ConfigTable.list(j, g);
            final int e = slotEntry[idx * ConfigTable.GROUPS + g];
            final int m = l * words;
            final int count = single ? slotCount[idx] : membersIn(idx, m);
            final boolean met = count >= configs.quorum(l, e, groupMembers, m)
                && configs.hasRequired(l, e, slotBitmap, idx * words, groupMembers, m);
            if (!met) {
                final long timeout = configs.timeoutNs(l, e);
                if (timeout == SyncConfig.NO_TIMEOUT || nowNs - slotFirstNs[idx] < timeout) {
                    return NOT_DUE;
                }
                timedOut = true;
            }
        }
        return timedOut ? DUE_BY_TIMEOUT : DUE;
    }

    /**
     * Records a release its timeout alone allowed: the workers it left out join the late set, and
     * its round's latch holds the workers it held (intersected with an earlier one of the round).
     */
    private void recordTimeout(final int j, final int idx) {
        final int round = slotRound[idx];
        final int r = j * ring + Math.floorMod(round, ring);
        final boolean fresh = latchRound[r] != round;
        latchRound[r] = round;
        for (int w = 0; w < words; w++) {
            final long held = slotBitmap[idx * words + w];
            jobLate[j * words + w] |= jobJoined[j * words + w] & ~held;
            latchBitmap[r * words + w] = fresh ? held : latchBitmap[r * words + w] & held;
        }
    }

    /** Whether an earlier step of the slot's round timed out and the slot holds every worker that release held. */
    private boolean latched(final int j, final int idx) {
        final int round = slotRound[idx];
        final int r = j * ring + Math.floorMod(round, ring);
        if (latchRound[r] != round) {
            return false;
        }
        for (int w = 0; w < words; w++) {
            final long need = latchBitmap[r * words + w];
            if ((slotBitmap[idx * words + w] & need) != need) {
                return false;
            }
        }
        return true;
    }

    /**
     * Under a timeout config (every group's entry has one), whether the slot holds every joined
     * worker outside the late set, which is not empty: a worker a timeout left out is not waited
     * for again until it catches up.
     */
    private boolean onTimeWithoutTheLate(final int j, final int idx) {
        boolean late = false;
        for (int w = 0; w < words; w++) {
            late |= jobLate[j * words + w] != 0;
        }
        if (!late || slotCount[idx] == 0) {
            return false;
        }
        final int groups = jobGroups[j];
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if ((groups & (1 << g)) != 0
                && configs.timeoutNs(ConfigTable.list(j, g), slotEntry[idx * ConfigTable.GROUPS + g]) == SyncConfig.NO_TIMEOUT) {
                return false;
            }
        }
        for (int w = 0; w < words; w++) {
            final long need = jobJoined[j * words + w] & ~jobLate[j * words + w];
            if ((slotBitmap[idx * words + w] & need) != need) {
                return false;
            }
        }
        return true;
    }

    /** How many of a group's members (at {@code m} in groupMembers) contributed to the slot. */
    private int membersIn(final int idx, final int m) {
        int n = 0;
        for (int w = 0; w < words; w++) {
            n += Long.bitCount(slotBitmap[idx * words + w] & groupMembers[m + w]);
        }
        return n;
    }

    /**
     * Installs a sync config for a job from round {@code firstRound} on (hot-swap, invariant 5):
     * rounds below it keep their configs, so no round is released under a mix. The first round
     * must be one no worker can have started: see {@link #earliestSwapRound}. Returns OK,
     * UNKNOWN_JOB, TOO_EARLY, BAD_KEY (the config does not fit the job) or TABLE_FULL.
     * Call on the switch's thread.
     */
    public Status installConfig(final int job, final int firstRound, final SyncConfig config) {
        return installConfig(job, WorkerGroupEntry.DEFAULT_GROUP, firstRound, config);
    }

    /** {@link #installConfig(int, int, SyncConfig)} for one worker group's entries (BAD_KEY: no such group). */
    public Status installConfig(final int job, final int group, final int firstRound, final SyncConfig config) {
        final int j = jobTable.get(job);
        if (j == JobTable.MISSING) {
            return Status.UNKNOWN_JOB;
        }
        if (group < 0 || group >= ConfigTable.GROUPS) {
            return Status.BAD_KEY;
        }
        if (firstRound < swapRound(j, group)) {
            return Status.TOO_EARLY;
        }
        if (!fits(j, group, config)) {
            return Status.BAD_KEY;
        }
        final Status status = configs.install(ConfigTable.list(j, group), firstRound, config, jobWorkers[j], jobReleasedRound[j]);
        if (status == Status.OK) {
            configsWritten(j);
        }
        return status;
    }

    /**
     * The first round a config change of any group may name for the job: the largest of
     * {@link #earliestSwapRound(int, int)} over its groups. -1 for an unknown job.
     */
    public int earliestSwapRound(final int job) {
        final int j = jobTable.get(job);
        if (j == JobTable.MISSING) {
            return -1;
        }
        int earliest = 0;
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if ((jobGroups[j] & (1 << g)) != 0) {
                earliest = Math.max(earliest, swapRound(j, g));
            }
        }
        return earliest;
    }

    /**
     * The first round a change of one group's entries may name: past every round any worker sent a
     * packet for (a slot takes its entries when it opens) and past every round a
     * worker of the group may have started under its bounds in force (R + s + 1, at most the release
     * ring ahead of R). -1 for an unknown job or group.
     */
    public int earliestSwapRound(final int job, final int group) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || group < 0 || group >= ConfigTable.GROUPS ? -1 : swapRound(j, group);
    }

    private int swapRound(final int j, final int group) {
        // the newest round any worker sent a packet for (exponents or values): no slot is open beyond it
        int newest = -1;
        for (int w = 0; w < jobWorkers[j]; w++) {
            newest = Math.max(newest, workerArrivalRound[j * maxWorkers + w]);
        }
        final int maxBound = configs.maxBoundFrom(ConfigTable.list(j, group), jobReleasedRound[j] + 1);
        return SyncRules.earliestSwapRound(jobReleasedRound[j], maxBound, ring, newest);
    }

    /** The job's config epoch (bumped by every install), stamped on every RESULT; -1 if unknown. */
    public int configEpoch(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : jobEpoch[j];
    }

    private void updateTimeoutSweep() {
        final long min = configs.minTimeoutNs();
        timeoutSweepNs = min == SyncConfig.NO_TIMEOUT ? SyncConfig.NO_TIMEOUT : Math.max(100_000L, min / 4);
    }

    private void onData(final int port, final long nowNs, final Outbox outbox) {
        final int j = jobTable.get(in.jobId());
        if (j == JobTable.MISSING) {
            counters.increment(SwitchCounter.DROP_UNKNOWN_JOB);
            return;
        }
        final int worker = in.workerId();
        if (worker >= jobWorkers[j]) {
            counters.increment(SwitchCounter.DROP_BAD_WORKER);
            return;
        }
        if (!isJoined(j, worker)) {
            counters.increment(SwitchCounter.DROP_NOT_JOINED);
            return;
        }
        final int payload = in.flags() & Flags.PAYLOAD;
        final int n = in.elementCount();
        if (payload == Flags.PAYLOAD || (payload != 0 ? (n == 0 || n > chunkElements) : n != 0)) {
            counters.increment(SwitchCounter.DROP_BAD_ELEMENT_COUNT);
            return;
        }
        final long seq = in.seq();
        final int round = in.round();
        final int chunk = in.chunk();
        if (seq < 0 || round < 0 || chunk < 0 || chunk >= jobChunksPerRound[j]) {
            counters.increment(SwitchCounter.DROP_BAD_SLOT);
            return;
        }
        final int slot = StepLayout.slot(seq, poolSize);
        final int set = StepLayout.shadowSet(seq, poolSize);
        if (in.poolIndex() != slot || in.shadowSet() != set) {
            counters.increment(SwitchCounter.DROP_BAD_SLOT);
            return;
        }
        final int idx = slotIndex(j, set, slot);
        final long current = slotSeq[idx];
        if (seq > current) {
            final int l = ConfigTable.list(j, workerGroup[j * maxWorkers + worker]);
            // invariant 2, enforced: the bound of the sender's group for round c
            if (!SyncRules.mayStart(round, jobReleasedRound[j], configs.bound(l, configs.entryFor(l, round)), ring)) {
                counters.increment(SwitchCounter.DROP_BEYOND_BOUND);
                nack(port, Status.AHEAD, outbox);
                return;
            }
            if (!previousUseReleased(j, set, slot, seq)) {
                counters.increment(SwitchCounter.DROP_AHEAD);
                nack(port, Status.AHEAD, outbox);
                return;
            }
            resetSlot(idx, seq, round, chunk, n, payload);
            slotFirstNs[idx] = nowNs;
            for (int g = 0; g < ConfigTable.GROUPS; g++) {
                if ((jobGroups[j] & (1 << g)) != 0) {
                    final int gl = ConfigTable.list(j, g);
                    slotEntry[idx * ConfigTable.GROUPS + g] = (byte) configs.entryFor(gl, round);
                }
            }
            jobStarted[j] = true;
        } else if (seq < current) {
            counters.increment(SwitchCounter.DROP_STALE);
            nack(port, Status.STALE, outbox);
            return;
        }
        if (slotRound[idx] != round || slotChunk[idx] != chunk || slotLength[idx] != n
            || (slotFlags[idx] & Flags.PAYLOAD) != payload) {
            counters.increment(SwitchCounter.DROP_INCONSISTENT);
            return;
        }
        final int word = idx * words + (worker >>> 6);
        final long bit = 1L << (worker & 63);
        if ((slotBitmap[word] & bit) != 0) {
            counters.increment(SwitchCounter.DUPLICATES);
            if (slotReleased[idx]) {
                counters.increment(SwitchCounter.RESULTS_RETRANSMITTED);
                sendResult(j, idx, port, Flags.RETRANSMIT, outbox);
            }
            return;
        }
        if (slotReleased[idx]) {
            // late: the answer is the released result itself, whose bitmap leaves this worker out
            counters.increment(SwitchCounter.DROP_LATE);
            counters.increment(SwitchCounter.RESULTS_RETRANSMITTED);
            sendResult(j, idx, port, Flags.RETRANSMIT, outbox);
            return;
        }
        aggregate(j, idx, word, bit, n, payload);
        // counted in time again: waited for again
        jobLate[j * words + (worker >>> 6)] &= ~bit;
        if (payload == Flags.VALUES && round > workerClock[j * maxWorkers + worker]) {
            workerClock[j * maxWorkers + worker] = round;
        }
        if (round > workerArrivalRound[j * maxWorkers + worker]) {
            // the first packet of a round (exponents or values) marks the end of its computation
            workerArrivalRound[j * maxWorkers + worker] = round;
            estimateIteration(j, worker, round, nowNs, in.computeTimeNs());
        }
        releaseIfDue(j, idx, nowNs, outbox);
    }

    /** Releases the slot if it is due; a release its timeout alone allowed latches its round and marks the late. */
    private void releaseIfDue(final int j, final int idx, final long nowNs, final Outbox outbox) {
        final int due = releasable(j, idx, nowNs);
        if (due == NOT_DUE) {
            return;
        }
        if (due == DUE_BY_TIMEOUT) {
            counters.increment(SwitchCounter.TIMEOUT_RELEASES);
            recordTimeout(j, idx);
        }
        release(j, idx, nowNs, outbox);
    }

    private boolean previousUseReleased(final int j, final int set, final int slot, final long seq) {
        final long previous = StepLayout.previousUse(seq, poolSize);
        if (previous < 0) {
            return true;
        }
        final int other = slotIndex(j, set ^ 1, slot);
        return slotSeq[other] == previous && slotReleased[other];
    }

    /** The register index of a job's slot in a shadow set: (job * 2 + set) * P + slot. */
    private int slotIndex(final int j, final int set, final int slot) {
        return (j * 2 + set) * poolSize + slot;
    }

    /** The register index of the slot step seq of the job uses. */
    private int slotIndex(final int j, final long seq) {
        return slotIndex(j, StepLayout.shadowSet(seq, poolSize), StepLayout.slot(seq, poolSize));
    }

    private void resetSlot(final int idx, final long seq, final int round, final int chunk, final int n,
                           final int payload) {
        slotSeq[idx] = seq;
        slotCount[idx] = 0;
        slotRound[idx] = round;
        slotChunk[idx] = chunk;
        slotLength[idx] = n;
        slotExponent[idx] = PacketFlyweight.NO_EXPONENT;
        slotReleased[idx] = false;
        slotFlags[idx] = (byte) payload;
        Arrays.fill(slotBitmap, idx * words, idx * words + words, 0L);
        // sums start at 0, exponent maxima below any exponent
        Arrays.fill(slotSums, idx * chunkElements, idx * chunkElements + n,
            payload == Flags.EXPONENTS ? Integer.MIN_VALUE : 0);
    }

    private void aggregate(final int j, final int idx, final int word, final long bit, final int n, final int payload) {
        counters.increment(SwitchCounter.CONTRIBUTIONS);
        slotBitmap[word] |= bit;
        slotCount[idx]++;
        final byte exponent = in.exponent();
        if (exponent != PacketFlyweight.NO_EXPONENT && exponent > slotExponent[idx]) {
            slotExponent[idx] = exponent;
        }
        int flags = slotFlags[idx];
        if (in.hasFlag(Flags.SATURATED)) {
            flags |= Flags.SATURATED;
        }
        final int base = idx * chunkElements;
        if (payload == Flags.EXPONENTS) {
            for (int i = 0; i < n; i++) {
                slotSums[base + i] = Math.max(slotSums[base + i], in.dataValue(i));
            }
        } else if (payload == Flags.VALUES) {
            counters.increment(SwitchCounter.VALUE_CONTRIBUTIONS);
            final int[] contribution = readValues(n);
            // Fast path: while every contribution to the slot lies within the job's scale 2^Q
            // (Q = 30 - ceil(log2 N), what a correct worker sends), N of them sum to at most 2^30
            // and plain addition cannot overflow. Both loops vectorize.
            final int limit = jobValueLimit[j];
            int outside = 0;
            for (int i = 0; i < n; i++) {
                final int b = contribution[i];
                outside |= (b + limit) | (limit - b); // negative iff b < -limit or b > limit
            }
            if (outside < 0) {
                flags |= OUT_OF_SCALE;
            }
            if ((flags & OUT_OF_SCALE) == 0) {
                for (int i = 0; i < n; i++) {
                    slotSums[base + i] += contribution[i];
                }
            } else if (saturatingAdd(base, contribution, n)) {
                counters.increment(SwitchCounter.OVERFLOWS);
                flags |= Flags.SATURATED;
            }
        }
        slotFlags[idx] = (byte) flags;
    }

    /** Adds with saturation toward the first operand's sign instead of wrapping; true if any element saturated. */
    private boolean saturatingAdd(final int base, final int[] contribution, final int n) {
        int overflow = 0;
        for (int i = 0; i < n; i++) {
            final int a = slotSums[base + i];
            final int b = contribution[i];
            final int r = a + b;
            // overflow iff both operands share a sign the result lacks
            final int ov = ((a ^ r) & (b ^ r)) >> 31;
            slotSums[base + i] = (r & ~ov) | (((a >> 31) ^ Integer.MAX_VALUE) & ov);
            overflow |= ov;
        }
        return overflow != 0;
    }

    /** The DATA packet's values, copied in bulk into a scratch array (the packet lives in the transport's buffer). */
    private int[] readValues(final int n) {
        final ByteBuffer buffer = in.buffer();
        final int at = in.offset() + PacketFlyweight.DATA_VALUES_OFFSET;
        if ((at & 3) == 0) {
            if (buffer != viewSource) {
                viewSource = buffer;
                view = buffer.duplicate().order(PacketFlyweight.BYTE_ORDER).clear().asIntBuffer();
            }
            view.get(at >> 2, scratch, 0, n);
        } else {
            for (int i = 0; i < n; i++) {
                scratch[i] = buffer.getInt(at + 4 * i);
            }
        }
        return scratch;
    }

    /**
     * A worker's compute time for a round: what the worker reports in its DATA packets, if it does;
     * else as the switch sees it: from when it could start (its previous round's first packet, or
     * the release of the round its clearance waited for, whichever was later) to the first packet of
     * this round (exponents come first, and do not wait for other workers), one network delay included.
     */
    private void estimateIteration(final int j, final int worker, final int round, final long nowNs, final long reportedNs) {
        final int w = j * maxWorkers + worker;
        final long previous = workerArrivalNs[w];
        workerArrivalNs[w] = nowNs;
        if (reportedNs > 0) {
            // the worker measured it: no network or scheduling delay in it, and right even when the
            // worker computed the gradient before its round opened (a round released without it)
            workerIterationNs[w] = reportedNs;
            return;
        }
        if (previous == NO_ARRIVAL) {
            return;
        }
        long start = previous;
        final int l = ConfigTable.list(j, workerGroup[w]);
        final long gate = SyncRules.gateRound(round, configs.bound(l, configs.entryFor(l, round)));
        if (gate != Long.MIN_VALUE) {
            if (gate >= 0 && gate <= jobReleasedRound[j] && gate > jobReleasedRound[j] - ring) {
                start = Math.max(start, releaseNs[j * ring + (int) (gate % ring)]);
            }
        }
        workerIterationNs[w] = Math.max(0, nowNs - start);
    }

    private void release(final int j, final int idx, final long nowNs, final Outbox outbox) {
        slotReleased[idx] = true;
        counters.increment(SwitchCounter.RELEASES);
        if (slotCount[idx] < jobWorkers[j]) {
            counters.increment(SwitchCounter.PARTIAL_RELEASES);
        }
        if ((slotFlags[idx] & Flags.VALUES) != 0) {
            final int round = slotRound[idx];
            final int r = j * ring + Math.floorMod(round, ring);
            releaseCount[r]++;
            // R advances over every consecutive fully released round; their counters are reset
            // so the ring entry can serve round + G
            int next = jobReleasedRound[j] + 1;
            final int needed = jobChunksPerRound[j];
            while (releaseCount[j * ring + Math.floorMod(next, ring)] == needed) {
                releaseCount[j * ring + Math.floorMod(next, ring)] = 0;
                releaseNs[j * ring + Math.floorMod(next, ring)] = nowNs;
                jobReleasedRound[j] = next;
                next++;
            }
        }
        advanceOpenSeq(j);
        final int length = writeResult(j, idx, 0);
        final int base = j * words;
        for (int w = 0; w < words; w++) {
            long joined = jobJoined[base + w];
            while (joined != 0) {
                final int worker = (w << 6) + Long.numberOfTrailingZeros(joined);
                joined &= joined - 1;
                outbox.send(workerPort[j * maxWorkers + worker], txBuffer, 0, length);
                counters.increment(SwitchCounter.PACKETS_OUT);
            }
        }
        counters.increment(SwitchCounter.RESULTS_MULTICAST);
    }

    /** Moves the job's lowest open step past every step released in order. */
    private void advanceOpenSeq(final int j) {
        long open = jobOpenSeq[j];
        while (true) {
            final int idx = slotIndex(j, open);
            if (slotSeq[idx] != open || !slotReleased[idx]) {
                break;
            }
            open++;
        }
        jobOpenSeq[j] = open;
    }

    private void sendResult(final int j, final int idx, final int port, final int extraFlags, final Outbox outbox) {
        final int length = writeResult(j, idx, extraFlags);
        outbox.send(port, txBuffer, 0, length);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    private int writeResult(final int j, final int idx, final int extraFlags) {
        final int n = slotLength[idx];
        final int length = PacketFlyweight.resultLength(words, n);
        final long seq = slotSeq[idx];
        out.wrap(txBuffer, 0, length)
            .initHeader(PacketType.RESULT)
            .flags((slotFlags[idx] & ~OUT_OF_SCALE) | extraFlags)
            .elementCount(n)
            .jobId(jobId[j])
            .exponent(slotExponent[idx])
            .shadowSet(StepLayout.shadowSet(seq, poolSize))
            .seq(seq)
            .round(slotRound[idx])
            .chunk(slotChunk[idx])
            .poolIndex(StepLayout.slot(seq, poolSize))
            .contributorCount(slotCount[idx])
            .releasedRound(jobReleasedRound[j])
            .configEpoch(jobEpoch[j])
            .bitmapWords(words);
        for (int w = 0; w < words; w++) {
            out.bitmapWord(w, slotBitmap[idx * words + w]);
        }
        // the loss-recovery hint: the job's lowest open step and who has contributed to it so far
        final long open = jobOpenSeq[j];
        out.openSeq(open);
        final int openIdx = slotIndex(j, open);
        final boolean seen = slotSeq[openIdx] == open;
        for (int w = 0; w < words; w++) {
            out.openBitmapWord(w, seen ? slotBitmap[openIdx * words + w] : 0L);
        }
        // the values start at a multiple of 4, so the int view can copy them in bulk
        txInts.put((PacketFlyweight.RESULT_BITMAP_OFFSET + 16 * words) >> 2, slotSums, idx * chunkElements, n);
        return length;
    }

    private void nack(final int port, final Status status, final Outbox outbox) {
        final long seq = in.seq();
        out.wrap(txBuffer, 0, PacketFlyweight.HEADER_LENGTH)
            .initHeader(PacketType.NACK)
            .jobId(in.jobId())
            .workerId(in.workerId())
            .seq(seq)
            .round(in.round())
            .chunk(in.chunk())
            .poolIndex(in.poolIndex())
            .shadowSet(in.shadowSet())
            .status(status.code());
        outbox.send(port, txBuffer, 0, PacketFlyweight.HEADER_LENGTH);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    private void onJoin(final int port, final Outbox outbox) {
        counters.increment(SwitchCounter.JOINS);
        final int job = in.jobId();
        final int worker = in.workerId();
        final int workers = in.joinWorkerCount();
        final int elements = in.joinElementsPerRound();
        if (workers < 1 || workers > maxWorkers || worker >= workers || elements < 1) {
            refuseJoin(port, Status.BAD_KEY, outbox);
            return;
        }
        int j = jobTable.get(job);
        if (j == JobTable.MISSING) {
            if (!setupFits(workers)) {
                refuseJoin(port, Status.BAD_KEY, outbox);
                return;
            }
            j = allocateJob(job, workers, elements);
            if (j == JobTable.MISSING) {
                refuseJoin(port, Status.TABLE_FULL, outbox);
                return;
            }
        } else if (jobWorkers[j] != workers || jobElementsPerRound[j] != elements) {
            refuseJoin(port, Status.SHAPE_MISMATCH, outbox);
            return;
        }
        jobJoined[j * words + (worker >>> 6)] |= 1L << (worker & 63);
        workerPort[j * maxWorkers + worker] = port;
        writeJoinAck(Status.OK, workers, elements);
        outbox.send(port, txBuffer, 0, PacketFlyweight.JOIN_ACK_LENGTH);
        counters.increment(SwitchCounter.PACKETS_OUT);
        sendConfigs(j, worker, port, outbox);
    }

    private void onConfigRequest(final int port, final Outbox outbox) {
        final int j = jobTable.get(in.jobId());
        if (j == JobTable.MISSING) {
            counters.increment(SwitchCounter.DROP_UNKNOWN_JOB);
            return;
        }
        final int worker = in.workerId();
        if (worker >= jobWorkers[j]) {
            counters.increment(SwitchCounter.DROP_BAD_WORKER);
            return;
        }
        counters.increment(SwitchCounter.CONFIG_REQUESTS);
        sendConfigs(j, worker, port, outbox);
    }

    /** Sends every entry of the worker's group's config list to one port (the worker's). */
    private void sendConfigs(final int j, final int worker, final int port, final Outbox outbox) {
        final int l = ConfigTable.list(j, workerGroup[j * maxWorkers + worker]);
        final int entries = configs.entries(l);
        final int length = PacketFlyweight.configLength(words);
        for (int i = 0; i < entries; i++) {
            final int e = configs.at(l, i);
            out.wrap(txBuffer, 0, length)
                .initHeader(PacketType.CONFIG)
                .jobId(jobId[j])
                .configEpoch(jobEpoch[j])
                .chunk(i)
                .elementCount(entries)
                .configFirstRound(configs.firstRound(l, e))
                .configBound(configs.bound(l, e))
                .configQuorum(configs.quorum(l, e, groupMembers, l * words))
                .configLateMode(configs.lateMode(l, e).wireCode())
                .configTimeoutNs(configs.timeoutNs(l, e))
                .configBitmapWords(words);
            for (int w = 0; w < words; w++) {
                out.configRequiredWord(w, configs.requiredWord(l, e, w, groupMembers, l * words));
            }
            outbox.send(port, txBuffer, 0, length);
            counters.increment(SwitchCounter.PACKETS_OUT);
        }
    }

    /** Multicasts the config tables changed since the last call to every joined worker. */
    private void announceConfigs(final Outbox outbox) {
        if (!configsChanged) {
            return;
        }
        configsChanged = false;
        for (int j = 0; j < maxJobs; j++) {
            if (!jobActive[j] || !configDirty[j]) {
                continue;
            }
            configDirty[j] = false;
            for (int w = 0; w < words; w++) {
                long joined = jobJoined[j * words + w];
                while (joined != 0) {
                    final int worker = (w << 6) + Long.numberOfTrailingZeros(joined);
                    joined &= joined - 1;
                    sendConfigs(j, worker, workerPort[j * maxWorkers + worker], outbox);
                }
            }
        }
    }

    /** Whether the context's start configs fit the groups its worker_group entries make in a job of {@code workers}. */
    private boolean setupFits(final int workers) {
        final java.util.BitSet[] members = new java.util.BitSet[ConfigTable.GROUPS];
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            members[g] = new java.util.BitSet();
        }
        for (int w = 0; w < workers; w++) {
            members[w < setupGroups.length ? setupGroups[w] : 0].set(w);
        }
        try {
            for (int g = 0; g < ConfigTable.GROUPS; g++) {
                context.groupSync(g).resolve(workers, members[g]);
            }
            return true;
        } catch (final IllegalArgumentException ex) {
            return false;
        }
    }

    private void refuseJoin(final int port, final Status status, final Outbox outbox) {
        counters.increment(SwitchCounter.JOIN_REFUSED);
        writeJoinAck(status, in.joinWorkerCount(), in.joinElementsPerRound());
        outbox.send(port, txBuffer, 0, PacketFlyweight.JOIN_ACK_LENGTH);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    private void writeJoinAck(final Status status, final int workers, final int elements) {
        out.wrap(txBuffer, 0, PacketFlyweight.JOIN_ACK_LENGTH)
            .initHeader(PacketType.JOIN_ACK)
            .jobId(in.jobId())
            .workerId(in.workerId())
            .status(status.code())
            .joinWorkerCount(workers)
            .joinElementsPerRound(elements)
            .ackPoolSize(poolSize)
            .ackChunkElements(chunkElements)
            .ackRoundRing(ring)
            .ackMaxWorkers(maxWorkers);
    }

    private int allocateJob(final int job, final int workers, final int elements) {
        for (int j = 0; j < maxJobs; j++) {
            if (!jobActive[j]) {
                jobActive[j] = true;
                jobId[j] = job;
                jobWorkers[j] = workers;
                jobElementsPerRound[j] = elements;
                jobChunksPerRound[j] = StepLayout.chunks(elements, chunkElements);
                jobValueLimit[j] = 1 << (30 - (32 - Integer.numberOfLeadingZeros(workers - 1)));
                jobReleasedRound[j] = -1;
                jobOpenSeq[j] = 0;
                // the context's worker groups (default: all in group 0); each group's list starts
                // with its start config
                for (int g = 0; g < ConfigTable.GROUPS; g++) {
                    configs.reset(ConfigTable.list(j, g), context.groupSync(g), workers);
                }
                jobEpoch[j] = 0;
                jobStarted[j] = false;
                Arrays.fill(workerGroup, j * maxWorkers, (j + 1) * maxWorkers, (byte) 0);
                Arrays.fill(workerGroupSet, j * words, (j + 1) * words, 0L);
                Arrays.fill(groupMembers, ConfigTable.list(j, 0) * words, ConfigTable.list(j + 1, 0) * words, 0L);
                for (int w = 0; w < workers; w++) {
                    groupMembers[ConfigTable.list(j, 0) * words + (w >>> 6)] |= 1L << (w & 63);
                }
                jobGroups[j] = 1;
                for (int w = 0; w < Math.min(workers, setupGroups.length); w++) {
                    if (setupGroups[w] != 0) {
                        moveWorker(j, w, 0, setupGroups[w]);
                        workerGroupSet[j * words + (w >>> 6)] |= 1L << (w & 63);
                    }
                }
                updateTimeoutSweep();
                Arrays.fill(jobJoined, j * words, (j + 1) * words, 0L);
                Arrays.fill(jobLate, j * words, (j + 1) * words, 0L);
                Arrays.fill(workerClock, j * maxWorkers, (j + 1) * maxWorkers, -1);
                Arrays.fill(workerArrivalRound, j * maxWorkers, (j + 1) * maxWorkers, -1);
                Arrays.fill(workerArrivalNs, j * maxWorkers, (j + 1) * maxWorkers, NO_ARRIVAL);
                Arrays.fill(workerIterationNs, j * maxWorkers, (j + 1) * maxWorkers, 0L);
                Arrays.fill(workerPort, j * maxWorkers, (j + 1) * maxWorkers, -1);
                Arrays.fill(releaseCount, j * ring, (j + 1) * ring, 0);
                Arrays.fill(latchRound, j * ring, (j + 1) * ring, NO_LATCH);
                Arrays.fill(slotSeq, j * 2 * poolSize, (j + 1) * 2 * poolSize, NO_SEQ);
                Arrays.fill(slotReleased, j * 2 * poolSize, (j + 1) * 2 * poolSize, false);
                jobTable.put(job, j);
                counters.increment(SwitchCounter.JOBS_CREATED);
                return j;
            }
        }
        return JobTable.MISSING;
    }

    private void onLeave(final int port, final Outbox outbox) {
        counters.increment(SwitchCounter.LEAVES);
        final int j = jobTable.get(in.jobId());
        final int worker = in.workerId();
        if (j != JobTable.MISSING && worker < jobWorkers[j]) {
            jobJoined[j * words + (worker >>> 6)] &= ~(1L << (worker & 63));
            boolean anyJoined = false;
            for (int w = 0; w < words; w++) {
                anyJoined |= jobJoined[j * words + w] != 0;
            }
            if (!anyJoined) {
                jobActive[j] = false;
                jobTable.remove(jobId[j]);
                counters.increment(SwitchCounter.JOBS_FREED);
            }
        }
        out.wrap(txBuffer, 0, PacketFlyweight.HEADER_LENGTH)
            .initHeader(PacketType.LEAVE_ACK)
            .jobId(in.jobId())
            .workerId(worker);
        outbox.send(port, txBuffer, 0, PacketFlyweight.HEADER_LENGTH);
        counters.increment(SwitchCounter.PACKETS_OUT);
    }

    private boolean isJoined(final int j, final int worker) {
        return (jobJoined[j * words + (worker >>> 6)] & (1L << (worker & 63))) != 0;
    }

    private static SwitchCounter dropCounter(final PacketCheck check) {
        switch (check) {
            case TRUNCATED:
                return SwitchCounter.DROP_TRUNCATED;
            case BAD_MAGIC:
                return SwitchCounter.DROP_BAD_MAGIC;
            case BAD_VERSION:
                return SwitchCounter.DROP_BAD_VERSION;
            case BAD_TYPE:
                return SwitchCounter.DROP_BAD_TYPE;
            default:
                return SwitchCounter.DROP_BAD_LENGTH;
        }
    }
}
