package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableModel;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * Compiles a policy to the switch table writes it makes for a job: a {@code worker_group} entry
 * per worker of a declared group, the start entry of every group (first round 0) and, per rule, the
 * {@code sync_config} entry it installs when it fires, from the earliest safe
 * round B (known only then), as an INSTALL: the hot-swap write, which inserts the entry at B and
 * replaces any entry starting at or after B. Config rules install their config with the excluded workers removed
 * from the required set; exclude and include rules install the base config with worker W removed or
 * added back. A config rule writes the entries of the group it names (the default group, 0, without
 * a prefix). Each value is checked against the job's size and the group's members, so a policy that
 * cannot fit fails here.
 */
public final class PolicyCompiler {
    /**
     * One rule's compiled form: its condition, and what it installs when it fires: a config rule its
     * {@link #config} for {@link #group} (the entry made by {@link #install} from the group's
     * {@link #entryConfig}), an exclude or include rule its group's base config with the worker it
     * names removed or required again. {@link #install} is that write as text, with what is known only
     * at run time named (B, BASE, EXCLUDED, W, TYPICAL).
     */
    public static final class CompiledRule {
        public final Policy.Rule rule;
        /** The group a config rule writes; -1 for exclude and include (the group of the worker named). */
        public final int group;
        /** The config a config rule sets as its group's base; null for exclude and include. */
        public final SyncConfig config;
        public final String install;

        CompiledRule(final Policy.Rule rule, final String install) {
            this.rule = rule;
            final boolean sets = rule.action.kind != Policy.Action.Kind.EXCLUDE && rule.action.kind != Policy.Action.Kind.INCLUDE;
            this.group = sets ? rule.action.group : -1;
            this.config = sets ? rule.action.config : null;
            this.install = install;
        }

        @Override
        public String toString() {
            return "line " + rule.line + ": when " + rule.condition() + " -> " + install;
        }
    }

    private PolicyCompiler() {
    }

    /** The hot-swap write of a group's entry: {@code config} in force from {@code firstRound} on, replacing later entries. */
    public static TableWrite install(final int job, final int group, final int firstRound, final SyncConfig config) {
        return TableWrite.install(SyncConfigEntry.builder().job(job).group(group).firstRound(firstRound).config(config).build());
    }

    /**
     * The config a group's entry gets for its base config {@code config}: the group's excluded
     * members ({@code excluded}, may be empty) removed from the required set with the exclude action's
     * late mode, and a relative timeout in milliseconds of the typical round time ({@code roundNs};
     * left out while no round was measured, 0).
     */
    public static SyncConfig entryConfig(final SyncConfig config, final BitSet excluded, final LateMode excludeLate,
                                         final long roundNs) {
        final SyncConfig timed = absolute(config, roundNs);
        return excluded.isEmpty() ? timed : timed.excluding(excluded).withLateMode(excludeLate);
    }

    /**
     * A config with its relative timeout in milliseconds of a typical round ({@code roundNs}; to a
     * tenth of a millisecond), or without it while no round was measured ({@code roundNs} 0).
     */
    static SyncConfig absolute(final SyncConfig config, final long roundNs) {
        if (config.timeoutPercent() == 0) {
            return config;
        }
        final SyncConfig none = config.withoutTimeout();
        if (roundNs <= 0) {
            return none;
        }
        final long tenths = Math.max(1, Math.round(roundNs * (config.timeoutPercent() / 100.0) / 100_000));
        return none.withTimeoutNs(tenths * 100_000);
    }

    /**
     * Refuses a policy with a rule on telemetry only workers have (the waiting share, staleness),
     * for a controller that reads the switch's alone; {@code where} says which one, for the message.
     */
    public static void requireSwitchTelemetry(final Policy policy, final String where) {
        for (final Policy.Rule rule : policy.rules()) {
            if (rule.metric == Policy.Metric.WAITING_SHARE || rule.metric == Policy.Metric.STALENESS) {
                throw new IllegalArgumentException("policy " + policy.name() + ": '" + rule.condition() + "' needs worker-side "
                    + "telemetry; " + where + " a policy may use lag, round_time, round, slowdown(worker) and failed(worker)");
            }
        }
    }

    /** The start entry a job begins with. */
    public static SyncConfigEntry startEntry(final Policy policy, final int job) {
        return SyncConfigEntry.builder().job(job).firstRound(0).config(policy.start()).build();
    }

    /**
     * The writes that set a job up before its first round: a worker_group entry per worker of a
     * declared group, and each group's start entry from round 0 (the default group's first).
     */
    public static List<TableWrite> startWrites(final Policy policy, final int job, final int workers) {
        return startWrites(policy, job, workers, 0);
    }

    /** {@link #startWrites(Policy, int, int)} with the start entries installed from {@code firstRound} (a running job). */
    public static List<TableWrite> startWrites(final Policy policy, final int job, final int workers, final int firstRound) {
        final List<TableWrite> writes = new ArrayList<>();
        final int[] groupOf = groups(() -> policy.groupOf(workers));
        for (int w = 0; w < workers; w++) {
            if (groupOf[w] != 0) {
                writes.add(TableWrite.insert(WorkerGroupEntry.builder().job(job).worker(w).group(groupOf[w]).build()));
            }
        }
        for (int g = 0; g <= policy.groups().size(); g++) {
            writes.add(install(job, g, firstRound, policy.start(g)));
        }
        return writes;
    }

    /** Each rule's compiled write; fails naming the line whose config does not fit {@code workers} or its group. */
    public static List<CompiledRule> compile(final Policy policy, final int job, final int workers) {
        final BitSet[] members = groups(() -> policy.members(workers));
        for (int g = 0; g < members.length; g++) {
            check(policy.start(g), workers, members[g], 0);
        }
        final List<CompiledRule> out = new ArrayList<>();
        for (final Policy.Rule rule : policy.rules()) {
            final int g = rule.action.group;
            final String key = TableModel.SYNC_CONFIG + "{job=" + job + (g == 0 ? "" : ", group=" + g) + ", first_round=B}";
            final String value;
            switch (rule.action.kind) {
                case EXCLUDE:
                    value = "BASE+exclude:W" + (rule.action.lateMode == LateMode.DROP ? "+drop" : "") + " for the worker W it names"
                        + (members.length > 1 ? " (the entry of W's group)" : "");
                    break;
                case INCLUDE:
                    value = "BASE with the worker W it names required again";
                    break;
                default: {
                    // a relative timeout is installed in milliseconds of the typical round time: checked as 1 ms
                    final int percent = rule.action.config.timeoutPercent();
                    final SyncConfig concrete = percent == 0 ? rule.action.config : rule.action.config.withTimeoutNs(1_000_000);
                    check(concrete, workers, members[g], rule.line);
                    value = rule.action.config + "+exclude:EXCLUDED " + describe(concrete.resolve(workers, members[g]),
                        percent == 0 ? null : percent + "% of the typical round time (TYPICAL)");
                    break;
                }
            }
            out.add(new CompiledRule(rule, "INSTALL " + key + " -> " + value));
        }
        return out;
    }

    /** The compiled policy as text: a header, the start entry with its resolved value, one line per rule. */
    public static String render(final Policy policy, final int job, final int workers) {
        final StringBuilder sb = new StringBuilder();
        sb.append("policy ").append(policy.name()).append(" for job ").append(job).append(" of ").append(workers).append(" workers\n");
        final BitSet[] members = groups(() -> policy.members(workers));
        for (final TableWrite w : startWrites(policy, job, workers)) {
            sb.append("start: ").append(w);
            if (w.entry() instanceof SyncConfigEntry) {
                final int g = ((SyncConfigEntry) w.entry()).group();
                sb.append(' ').append(describe(policy.start(g).resolve(workers, members[g]), null));
            }
            sb.append('\n');
        }
        for (final CompiledRule r : compile(policy, job, workers)) {
            sb.append(r).append('\n');
        }
        sb.append("B: the earliest safe round when the rule fires (earliest_swap_round); INSTALL: insert at B, replacing "
            + "entries from B on; BASE: the config in force without exclusions; EXCLUDED: the workers excluded then (none: "
            + "nothing appended)" + (policy.rules().stream().anyMatch(r -> r.action.config != null && r.action.config.timeoutPercent() != 0)
            ? "; TYPICAL: the lower quartile of the last " + Controller.ROUND_TIME_WINDOW + " round times, installed again"
                + " when it moves by a fifth" : "") + "\n");
        return sb.toString();
    }

    private static void check(final SyncConfig config, final int workers, final BitSet members, final int line) {
        try {
            config.resolve(workers, members);
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException((line > 0 ? "line " + line + ": " : "start: ") + ex.getMessage());
        }
    }

    /** A computation over the policy's groups, its failure (a worker the job does not have) named as such. */
    private static <T> T groups(final Supplier<T> f) {
        try {
            return f.get();
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("groups: " + ex.getMessage());
        }
    }

    /** A resolved config as text; {@code timeout}, when not null, in place of its timeout (a relative one). */
    private static String describe(final SyncConfig.Resolved r, final String timeout) {
        return "[bound=" + (r.bound == SyncConfig.UNBOUNDED ? "unbounded" : Integer.toString(r.bound)) + " required=" + r.required
            + (r.sample > 0 ? " sample=" + r.sample : "") + " quorum=" + r.quorum + " timeout="
            + (timeout != null ? timeout : r.timeoutNs == SyncConfig.NO_TIMEOUT ? "none" : (r.timeoutNs / 1e6) + "ms")
            + " late=" + r.lateMode.name().toLowerCase(Locale.ROOT) + "]";
    }
}
