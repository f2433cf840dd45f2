package io.serene.dataplane;

import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;

/**
 * The switch's table writes and reads, on the switch thread: the {@code sync_config} and
 * {@code worker_group} tables, each write checked once here and answered with a result code, and
 * the hot-swap rule (the earliest first round a change may name). Control operations allocate;
 * nothing here runs per packet.
 */
final class SwitchTables {
    private final int words;
    private final int ring;
    private final JobTable jobTable;
    private final JobRegisters jobs;
    private final GroupTable groups;
    private final ConfigTable configs;
    private final ReleaseRing releases;
    /** Where a new job's entries come from: the switch's start config per group, and its worker groups. */
    private final SwitchContext context;

    SwitchTables(final SwitchContext context, final int words, final int ring, final JobTable jobTable, final JobRegisters jobs,
                 final GroupTable groups, final ConfigTable configs, final ReleaseRing releases) {
        this.context = context;
        this.words = words;
        this.ring = ring;
        this.jobTable = jobTable;
        this.jobs = jobs;
        this.groups = groups;
        this.configs = configs;
        this.releases = releases;
    }

    /**
     * A new job's tables (index j, {@code workers} workers): the switch's worker groups, and each
     * group's start config from round 0, the entries every job starts with (as a P4 table's default
     * entries), before any worker can have sent. Every later change is a {@link #write}.
     */
    void startJob(final int j, final int workers) {
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            configs.reset(ConfigTable.list(j, g), context.groupSync(g), workers);
        }
        groups.reset(j, workers, context.defaultGroups());
    }

    /** See {@link SwitchPipeline#write}. */
    Status write(final TableWrite write) {
        if (write.entry() instanceof WorkerGroupEntry) {
            return write.kind() == TableWrite.Kind.INSTALL ? Status.BAD_KEY : writeGroup(write.kind(), (WorkerGroupEntry) write.entry());
        }
        final SyncConfigEntry entry = (SyncConfigEntry) write.entry();
        return write.kind() == TableWrite.Kind.INSTALL
            ? install(entry.job(), entry.group(), entry.firstRound(), entry.config())
            : writeConfig(write.kind(), entry);
    }

    /**
     * The checks every sync_config change passes, a write or an install: a known job, a group in
     * range, a first round past {@link #swapRound} and, unless deleting, a config that fits the
     * group. OK or the code naming the failure.
     */
    private Status checkConfigChange(final int j, final int group, final int firstRound, final SyncConfig config) {
        if (j == JobTable.MISSING) {
            return Status.UNKNOWN_JOB;
        }
        if (group < 0 || group >= ConfigTable.GROUPS) {
            return Status.BAD_KEY;
        }
        if (firstRound < swapRound(j, group)) {
            return Status.TOO_EARLY;
        }
        if (config != null && !fits(j, group, config)) {
            return Status.BAD_KEY;
        }
        return Status.OK;
    }

    private Status writeConfig(final TableWrite.Kind kind, final SyncConfigEntry entry) {
        final int j = jobTable.get(entry.job());
        final Status checked = checkConfigChange(j, entry.group(), entry.firstRound(),
            kind == TableWrite.Kind.DELETE ? null : entry.config());
        if (checked != Status.OK) {
            return checked;
        }
        final int l = ConfigTable.list(j, entry.group());
        final int e = configs.find(l, entry.firstRound());
        switch (kind) {
            case INSERT:
                return e >= 0 ? Status.DUPLICATE_ENTRY
                    : configs.insert(l, entry.firstRound(), entry.config(), jobs.workers[j], releases.releasedRound[j]);
            case MODIFY:
                if (e < 0) {
                    return Status.NOT_FOUND;
                }
                configs.modify(l, e, entry.config(), jobs.workers[j]);
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

    /** The INSTALL write (see {@link TableWrite.Kind#INSTALL}). */
    private Status install(final int job, final int group, final int firstRound, final SyncConfig config) {
        final int j = jobTable.get(job);
        final Status checked = checkConfigChange(j, group, firstRound, config);
        if (checked != Status.OK) {
            return checked;
        }
        return configs.install(ConfigTable.list(j, group), firstRound, config, jobs.workers[j], releases.releasedRound[j]);
    }

    /** Whether a config fits a group of the job: its excluded workers exist, its quorum fits the members. */
    private boolean fits(final int j, final int group, final SyncConfig config) {
        return config.misfit(jobs.workers[j], groups.membersOf(j, group)) == null;
    }

    private Status writeGroup(final TableWrite.Kind kind, final WorkerGroupEntry entry) {
        final int j = jobTable.get(entry.job());
        if (j == JobTable.MISSING) {
            return Status.UNKNOWN_JOB;
        }
        final int worker = entry.worker();
        if (worker >= jobs.workers[j] || (entry.hasValue() && entry.group() >= ConfigTable.GROUPS)) {
            return Status.BAD_KEY;
        }
        if (jobs.started[j]) {
            return Status.TOO_EARLY;
        }
        final boolean set = groups.isExplicit(j, worker);
        if (kind == TableWrite.Kind.INSERT && set) {
            return Status.DUPLICATE_ENTRY;
        }
        if (kind != TableWrite.Kind.INSERT && !set) {
            return Status.NOT_FOUND;
        }
        final int from = groups.of(j, worker);
        final int to = kind == TableWrite.Kind.DELETE ? WorkerGroupEntry.DEFAULT_GROUP : entry.group();
        groups.move(j, worker, from, to);
        if (!groupsFit(j)) {
            groups.move(j, worker, to, from);
            return Status.BAD_KEY;
        }
        groups.setExplicit(j, worker, kind != TableWrite.Kind.DELETE);
        return Status.OK;
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

    /** Whether start configs fit the groups the {@code setup} worker_group entries make in a job of {@code workers}. */
    static boolean setupFits(final SwitchContext context, final int[] setup, final int workers) {
        final BitSet[] members = new BitSet[ConfigTable.GROUPS];
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            members[g] = new BitSet();
        }
        for (int w = 0; w < workers; w++) {
            members[w < setup.length ? setup[w] : 0].set(w);
        }
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if (context.groupSync(g).misfit(workers, members[g]) != null) {
                return false;
            }
        }
        return true;
    }

    /**
     * The job's table entries: its worker_group entries (by worker), then its sync_config entries
     * per group with members, oldest first; empty for an unknown job.
     */
    List<TableEntry> entries(final int job) {
        final List<TableEntry> list = new ArrayList<>();
        final int j = jobTable.get(job);
        if (j == JobTable.MISSING) {
            return list;
        }
        for (int w = 0; w < jobs.workers[j]; w++) {
            if (groups.isExplicit(j, w)) {
                list.add(WorkerGroupEntry.builder().job(job).worker(w).group(groups.of(j, w)).build());
            }
        }
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if (!groups.inUse(j, g)) {
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

    /** The job's config table for telemetry, per group with members (group 0 first), oldest entry first. */
    List<SwitchPipeline.ConfigRow> configRows(final int job) {
        final List<SwitchPipeline.ConfigRow> rows = new ArrayList<>();
        final int j = jobTable.get(job);
        if (j != JobTable.MISSING) {
            for (int g = 0; g < ConfigTable.GROUPS; g++) {
                if (!groups.inUse(j, g)) {
                    continue;
                }
                final int l = ConfigTable.list(j, g);
                for (int i = 0; i < configs.entries(l); i++) {
                    final int e = configs.at(l, i);
                    rows.add(new SwitchPipeline.ConfigRow(g, configs.firstRound(l, e), configs.describe(l, e, groups.members, l * words)));
                }
            }
        }
        return rows;
    }

    /**
     * An entry's value as a sync config (normalized: the required set as exclusions of the job's
     * workers, the quorum if written).
     */
    private SyncConfig config(final int j, final int group, final int e) {
        final int l = ConfigTable.list(j, group);
        final long[] all = new long[words];
        for (int w = 0; w < jobs.workers[j]; w++) {
            all[w >>> 6] |= 1L << (w & 63);
        }
        final BitSet required = configs.required(l, e, all, 0);
        SyncConfig c = SyncConfig.bsp().withBound(configs.bound(l, e));
        if (required.isEmpty()) {
            c = c.requiringNone();
        } else {
            final BitSet excluded = new BitSet();
            excluded.set(0, jobs.workers[j]);
            excluded.andNot(required);
            if (!excluded.isEmpty()) {
                c = c.excluding(excluded);
            }
        }
        if (configs.sample(l, e) > 0) {
            c = c.withSample(configs.sample(l, e));
        }
        if (configs.writtenQuorum(l, e) != SyncConfig.QUORUM_OF_REQUIRED) {
            c = c.withQuorum(configs.writtenQuorum(l, e));
        }
        if (configs.timeoutNs(l, e) != SyncConfig.NO_TIMEOUT) {
            c = c.withTimeoutNs(configs.timeoutNs(l, e));
        }
        return c.withLateMode(configs.lateMode(l, e)).withBusy(configs.busy(l, e));
    }

    /** The largest {@link #swapRound} over the job's groups with members; -1 for an unknown job. */
    int earliestSwapRound(final int job) {
        final int j = jobTable.get(job);
        if (j == JobTable.MISSING) {
            return -1;
        }
        int earliest = 0;
        for (int g = 0; g < ConfigTable.GROUPS; g++) {
            if (groups.inUse(j, g)) {
                earliest = Math.max(earliest, swapRound(j, g));
            }
        }
        return earliest;
    }

    /** {@link #swapRound} of one group; -1 for an unknown job or group. */
    int earliestSwapRound(final int job, final int group) {
        final int j = jobTable.get(job);
        return j == JobTable.MISSING || group < 0 || group >= ConfigTable.GROUPS ? -1 : swapRound(j, group);
    }

    /**
     * The first round a change of one group's entries may name: past every round any worker sent a
     * packet for (a slot takes its entries when it opens) and past every round a worker of the
     * group may have started under its bounds in force.
     */
    private int swapRound(final int j, final int group) {
        final int maxBound = configs.maxBoundFrom(ConfigTable.list(j, group), releases.releasedRound[j] + 1);
        return SyncRules.earliestSwapRound(releases.releasedRound[j], maxBound, ring, jobs.newestArrival(j));
    }
}
