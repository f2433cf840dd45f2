package io.serene.dataplane;

import io.serene.protocol.Counters;
import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketCheck;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.Consumer;

/**
 * The software switch's data plane, sans-IO: the parser and dispatch of a PISA-style pipeline over
 * blocks that own their registers. All state is preallocated by the constructor from
 * {@link SwitchMemory}; one thread calls {@link #onPacket} and {@link #onTimer}; no allocation per
 * packet.
 *
 * <pre>
 *   worker w, step seq:   slot = seq mod P, shadow set = (seq / P) mod 2   (StepLayout)
 *
 *   packet --> parse/check --> MAC, replay window (SwitchAuth) --> JOIN, LEAVE... (JobLifecycle)
 *   DATA (DataPath) --> job --> bound (SyncRules) --> slot pool (set, slot): new use? reset slot;
 *              bitmap has w? duplicate; else add (sums, count, max exp) --> release rule due?
 *              RESULT multicast (deparser), release ring -> R
 *   timer  --> command proxy (table writes) --> config announcements --> timeout scanner
 * </pre>
 *
 * Blocks: {@link JobTable} and {@link JobRegisters}, {@link GroupTable}, {@link ConfigTable} with
 * {@link SwitchTables} (the only write path), {@link SlotPool} and {@link Aggregator},
 * {@link ReleaseRule}, {@link ReleaseRing}, {@link ArrivalRecorder}, {@link TimeoutScanner},
 * {@link Deparser}, {@link JobLifecycle}, {@link SwitchAuth}, {@link DataPath}, and
 * {@link SwitchCommands} (the command proxy).
 *
 * A slot of set s is reused for step seq only once step seq - P (the other set) is released:
 * a worker sends seq only after it received the result of seq - P, so every worker then holds
 * the result of seq - 2P, which is what the slot held (SwitchML's shadow-copy argument).
 */
public final class SwitchPipeline implements PacketEndpoint {
    private final SwitchMemory memory;
    private final Counters<SwitchCounter> counters = new Counters<>(SwitchCounter.class);
    private final SwitchCommands commands = new SwitchCommands(this);
    private final SwitchContext context;
    private final Consumer<Throwable> errorHandler;
    private final PacketHeader in = new PacketHeader();
    private final JoinPacket join = new JoinPacket();
    private boolean configsChanged;
    private final JobTable jobTable;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final SlotPool slots;
    private final ReleaseRing releases;
    private final ReleaseRule rule;
    private final SwitchTables tables;
    private final SwitchAuth auth;
    private final TimeoutScanner scanner = new TimeoutScanner();
    private final Deparser deparser;
    private final JobLifecycle lifecycle;
    private final Aggregator aggregator;
    private final ArrivalRecorder arrivals;
    private final NextRound nextRound;
    private final DataPath dataPath;
    private final JobMirror mirror;

    public SwitchPipeline(final SwitchContext context, final Consumer<Throwable> errorHandler) {
        this.context = context;
        this.memory = context.memory();
        this.errorHandler = errorHandler;
        final int maxJobs = memory.maxJobs();
        final int maxWorkers = memory.maxWorkers();
        final int poolSize = memory.poolSize();
        final int chunkElements = memory.chunkElements();
        final int words = memory.bitmapWords();
        final int ring = memory.roundRing();

        jobTable = new JobTable(maxJobs);
        jobs = new JobRegisters(maxJobs, maxWorkers, words);
        groups = new GroupTable(maxJobs, maxWorkers, words);
        configs = new ConfigTable(maxJobs, words);
        slots = new SlotPool(maxJobs, poolSize, words, chunkElements);
        releases = new ReleaseRing(maxJobs, ring, words);
        rule = new ReleaseRule(words, jobs, groups, configs, slots, releases);
        tables = new SwitchTables(context, words, ring, jobTable, jobs, groups, configs, releases);
        deparser = new Deparser(words, chunkElements, poolSize);
        auth = new SwitchAuth(context.secret(), maxJobs, maxWorkers, counters, jobTable, jobs);
        lifecycle = new JobLifecycle(context, memory, counters, jobTable, jobs, groups, configs, slots, releases, scanner, deparser, auth, tables);
        aggregator = new Aggregator(counters, jobs, slots, words, chunkElements);
        arrivals = new ArrivalRecorder(jobs, groups, configs, releases);
        nextRound = new NextRound(words, poolSize, jobs, groups, configs, slots, releases);
        dataPath = new DataPath(memory, counters, jobs, groups, configs, slots, releases, rule, auth, deparser, lifecycle, aggregator, arrivals);
        mirror = new JobMirror(memory, jobs, groups, configs, releases, auth);
    }

    public SwitchMemory memory() {
        return memory;
    }

    /** Bytes of every array and buffer this pipeline allocated, summed over its blocks' own counts. */
    public long allocatedBytes() {
        return jobTable.bytes() + jobs.bytes() + groups.bytes() + configs.bytes() + slots.bytes() + releases.bytes() + deparser.bytes()
            + aggregator.bytes() + rule.bytes() + auth.bytes();
    }

    /** What a data plane below this pipeline (the XDP program) reads of its jobs and writes back (switch thread). */
    public JobMirror mirror() {
        return mirror;
    }

    public Counters<SwitchCounter> counters() {
        return counters;
    }

    /** Highest round R of the job such that every round up to R is released; -1 if none, or if the job is unknown. */
    public int releasedRound(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : releases.releasedRound[j];
    }

    /**
     * When R passed a round (the switch's clock, ns), for the rounds R passed whose ring entries no
     * later round took over (R - G &lt; round &lt;= R); -1 for other rounds or an unknown job.
     */
    public long releasedAtNs(final int job, final int round) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : releases.releasedAtNs(j, round);
    }

    /**
     * Since when (the switch's clock, ns) the job waits for its next round: when R passed its
     * current value, or when the job was created while no round is released; -1 for an unknown job.
     */
    public long waitingSinceNs(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : releases.waitingSinceNs(j);
    }

    /** The job ids the switch holds (telemetry; allocates). */
    public int[] jobIds() {
        final int[] ids = new int[jobTable.size()];
        int n = 0;
        for (int j = 0; j < jobs.active.length && n < ids.length; j++) {
            if (jobs.active[j]) {
                ids[n++] = jobs.id[j];
            }
        }
        return n == ids.length ? ids : Arrays.copyOf(ids, n);
    }

    /** The highest round worker w of the job contributed to; -1 if none or unknown. */
    public int clock(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker >= jobs.workers[j] ? -1 : jobs.workerClock[jobs.worker(j, worker)];
    }

    /**
     * The workers the job's next round (R + 1) waits for, from the contributor bitmaps (telemetry and
     * stall reports; allocates; switch thread); see {@link NextRound#waitingFor}.
     */
    public BitSet waitingFor(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? new BitSet() : nextRound.waitingFor(j);
    }

    /**
     * Whether the job's round cannot be released without the worker (switch thread); false for an
     * unknown job or worker. See {@link NextRound#cannotGoOnWithout}.
     */
    public boolean cannotGoOnWithout(final int job, final int worker, final int round) {
        final int j = jobTable.get(job);
        return j != JobTable.MISSING && worker >= 0 && worker < jobs.workers[j] && nextRound.cannotGoOnWithout(j, worker, round);
    }

    /**
     * The run's round the job's round 0 is (0 unless it was rebuilt from checkpoints); -1 while it is
     * being rebuilt or if the job is unknown.
     */
    public int firstRound(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || jobs.forming[j] ? -1 : jobs.firstRound[j];
    }

    /**
     * Loses every job, as a restarted switch has (fault injection: {@code serene train --faults
     * switch-restart@R}); their workers learn it from UNKNOWN_JOB. Counters and tables' schema stay.
     */
    public void loseAllJobs() {
        lifecycle.loseAll();
    }

    /** The job's worker count; -1 if unknown. */
    public int workers(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : jobs.workers[j];
    }

    /** One row of a job's config table for telemetry: the group, the entry's first round, its value as text. */
    public record ConfigRow(int group, int firstRound, String rule) {
    }

    /**
     * The job's config table, per group with members (group 0 first), oldest entry first (for
     * telemetry and operators; allocates). Empty for an unknown job. Call on the switch's thread.
     */
    public List<ConfigRow> configEntries(final int job) {
        return tables.configRows(job);
    }

    /** The group of a worker of the job (its worker_group entry, else group 0); -1 for an unknown job or worker. */
    public int group(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker < 0 || worker >= jobs.workers[j] ? -1 : groups.of(j, worker);
    }

    /**
     * Worker w's last compute time, as it reported it or the switch estimates it (see
     * {@link ArrivalRecorder}); 0 before it is known, -1 for an unknown job or worker.
     */
    public long iterationNs(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker >= jobs.workers[j] ? -1 : jobs.iterationNs[jobs.worker(j, worker)];
    }

    /**
     * The newest round worker w was heard of in: it contributed to it (in time or late) or reported
     * it (-1: none yet, or an unknown job or worker). Unlike {@link #clock}, it moves for a worker
     * the job goes on without (excluded, always late): alive, though its contributions count for nothing.
     */
    public int heardRound(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker < 0 || worker >= jobs.workers[j] ? -1 : jobs.arrivalRound[jobs.worker(j, worker)];
    }

    /**
     * Worker w's last round before its newest (-1: none yet, or an unknown job or worker); its
     * compute time and arrival offset there are {@link #finishedComputeNs} and {@link #finishedOffsetNs}.
     */
    public int finishedRound(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker < 0 || worker >= jobs.workers[j] ? -1 : jobs.finishedRound[jobs.worker(j, worker)];
    }

    /** Worker w's compute time in its {@link #finishedRound} (0 before it is known, -1 for an unknown job or worker). */
    public long finishedComputeNs(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker < 0 || worker >= jobs.workers[j] ? -1 : jobs.finishedComputeNs[jobs.worker(j, worker)];
    }

    /**
     * Worker w's arrival offset in its {@link #finishedRound}: the most any of its packets of that
     * round came after the first packet of the same step from any worker, ns (what a timeout
     * measured from that first packet compares; -1 for an unknown job or worker).
     */
    public long finishedOffsetNs(final int job, final int worker) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || worker < 0 || worker >= jobs.workers[j] ? -1 : jobs.finishedOffsetNs[jobs.worker(j, worker)];
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
        final Status status = tables.write(write);
        if (status == Status.OK) {
            configsWritten(jobTable.get(write.entry().job()));
        }
        return status;
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

    /**
     * {@link #installConfig(int, int, SyncConfig)} for one worker group's entries (BAD_KEY: no such
     * group): the {@link TableWrite.Kind#INSTALL} write, through {@link #write} like every other.
     */
    public Status installConfig(final int job, final int group, final int firstRound, final SyncConfig config) {
        if (group < 0 || firstRound < 0) {
            // keys no entry can have; every other check is the write's own
            return jobTable.get(job) == JobTable.MISSING ? Status.UNKNOWN_JOB : group < 0 ? Status.BAD_KEY : Status.TOO_EARLY;
        }
        return write(TableWrite.install(SyncConfigEntry.builder().job(job).group(group).firstRound(firstRound).config(config).build()));
    }

    /**
     * The job's table entries: its worker_group entries (by worker), then its sync_config entries
     * per group with members, oldest first; empty for an unknown job (allocates; switch thread).
     */
    public List<TableEntry> entries(final int job) {
        return tables.entries(job);
    }

    /**
     * The first round a config change of any group may name for the job: the largest of
     * {@link #earliestSwapRound(int, int)} over its groups. -1 for an unknown job.
     */
    public int earliestSwapRound(final int job) {
        return tables.earliestSwapRound(job);
    }

    /**
     * The first round a change of one group's entries may name: past every round any worker sent a
     * packet for (a slot takes its entries when it opens) and past every round a
     * worker of the group may have started under its bounds in force (R + s + 1, at most the release
     * ring ahead of R). -1 for an unknown job or group.
     */
    public int earliestSwapRound(final int job, final int group) {
        return tables.earliestSwapRound(job, group);
    }

    /** The job's config epoch (bumped by every install), stamped on every RESULT; -1 if unknown. */
    public int configEpoch(final int job) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING ? -1 : jobs.epoch[j];
    }

    public int activeJobs() {
        return jobTable.size();
    }

    /** After a write that took: counted, timeouts re-armed, the table announced to the job's workers. */
    private void configsWritten(final int j) {
        jobs.epoch[j]++;
        counters.increment(SwitchCounter.CONFIG_INSTALLS);
        scanner.update(configs);
        // announced to the workers by the next timer call (the transport calls it after a task)
        jobs.configDirty[j] = true;
        configsChanged = true;
    }

    /**
     * A packet from a new source gets a peer entry only if its header passes the checks every packet
     * must pass and, with a secret, it carries its worker's MAC (counted as their drops).
     */
    @Override
    public boolean admits(final ByteBuffer buffer, final int offset, final int length) {
        try {
            if (headerPasses(buffer, offset, length)) {
                if (auth.signedByWorker(in)) {
                    return true;
                }
                counters.increment(SwitchCounter.DROP_BAD_MAC);
            }
            // a packet refused here never reaches onPacket: counted in as every packet is
            counters.increment(SwitchCounter.PACKETS_IN);
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
        return false;
    }

    /** Wraps the packet's header and checks it; a failed check is counted as the drop it is. */
    private boolean headerPasses(final ByteBuffer buffer, final int offset, final int length) {
        in.wrap(buffer, offset, length);
        final PacketCheck check = in.check();
        if (check != PacketCheck.OK) {
            counters.increment(dropCounter(check));
            return false;
        }
        return true;
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox outbox) {
        counters.increment(SwitchCounter.PACKETS_IN);
        try {
            if (!headerPasses(buffer, offset, length)) {
                return;
            }
            final int j = jobTable.get(in.jobId());
            final int admitted = auth.admit(in, j);
            if (admitted == SwitchAuth.BAD_MAC && in.type() == PacketType.JOIN) {
                // answered, so a worker given another secret hears why it cannot join (signed as the switch does)
                join.wrap(buffer, offset, length);
                lifecycle.refuseJoin(join, j, port, Status.BAD_MAC, outbox);
            } else if (admitted == SwitchAuth.REPLAYED) {
                lifecycle.onStaleNumber(in, j, port, outbox);
            }
            if (admitted != SwitchAuth.ADMITTED) {
                return;
            }
            switch (in.type()) {
                case DATA:
                    dataPath.onData(buffer, offset, length, j, port, nowNs, outbox);
                    break;
                case JOIN:
                    join.wrap(buffer, offset, length);
                    lifecycle.onJoin(join, port, nowNs, outbox);
                    break;
                case LEAVE:
                    lifecycle.onLeave(in, port, outbox);
                    break;
                case CONFIG_REQUEST:
                    lifecycle.onConfigRequest(in, j, port, nowNs, outbox);
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
     * The timer: drains the command queue (table writes from other threads), announces changed
     * config tables, then lets the timeout scanner visit the slots the time since its last call
     * allows and releases pending chunks whose timeout passed.
     */
    @Override
    public long onTimer(final long nowNs, final Outbox outbox) {
        // commands left past the drain limit: the timer again at once, after the packets waiting
        boolean commandsLeft = false;
        try {
            commandsLeft = commands.drain();
            if (configsChanged) {
                configsChanged = false;
                lifecycle.announceConfigs(outbox);
            }
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
        long leaseEnd = NO_DEADLINE;
        try {
            leaseEnd = lifecycle.expire(nowNs, context.jobLeaseNs());
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
        final long next = commandsLeft ? nowNs : leaseEnd;
        if (!scanner.armed()) {
            return next;
        }
        try {
            for (long v = scanner.visits(nowNs, slots.slots()); v > 0; v--) {
                final int idx = scanner.next(slots.slots());
                if (slots.seq[idx] == SlotPool.NO_SEQ || slots.released[idx] || slots.count[idx] == 0) {
                    continue;
                }
                final int j = slots.jobOf(idx);
                if (jobs.active[j]) {
                    dataPath.releaseIfDue(j, idx, nowNs, outbox);
                }
            }
        } catch (final RuntimeException ex) {
            counters.increment(SwitchCounter.ERRORS);
            errorHandler.accept(ex);
        }
        return Math.min(scanner.nextDeadline(nowNs), next);
    }

    private static SwitchCounter dropCounter(final PacketCheck check) {
        return switch (check) {
            case TRUNCATED -> SwitchCounter.DROP_TRUNCATED;
            case BAD_MAGIC -> SwitchCounter.DROP_BAD_MAGIC;
            case BAD_VERSION -> SwitchCounter.DROP_BAD_VERSION;
            case BAD_TYPE -> SwitchCounter.DROP_BAD_TYPE;
            default -> SwitchCounter.DROP_BAD_LENGTH;
        };
    }
}
