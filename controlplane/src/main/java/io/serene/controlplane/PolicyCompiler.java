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
    /** One rule's compiled form: its condition and the entry it installs. */
    public static final class CompiledRule {
        public final Policy.Rule rule;
        public final String install;

        CompiledRule(final Policy.Rule rule, final String install) {
            this.rule = rule;
            this.install = install;
        }

        @Override
        public String toString() {
            return "line " + rule.line + ": when " + rule.condition() + " -> " + install;
        }
    }

    private PolicyCompiler() {
    }

    /** The start entry a job begins with. */
    public static SyncConfigEntry startEntry(final Policy policy, final int job) {
        return SyncConfigEntry.builder().job(job).firstRound(0).config(policy.start()).build();
    }

    /**
     * The writes that set a job up before its first round: a worker_group entry per worker of a
     * declared group, and each group's start entry (the default group's first).
     */
    public static List<TableWrite> startWrites(final Policy policy, final int job, final int workers) {
        final List<TableWrite> writes = new ArrayList<>();
        final int[] groupOf = groups(() -> policy.groupOf(workers));
        for (int w = 0; w < workers; w++) {
            if (groupOf[w] != 0) {
                writes.add(TableWrite.insert(WorkerGroupEntry.builder().job(job).worker(w).group(groupOf[w]).build()));
            }
        }
        for (int g = 0; g <= policy.groups().size(); g++) {
            writes.add(TableWrite.insert(SyncConfigEntry.builder().job(job).group(g).firstRound(0).config(policy.start(g)).build()));
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
            + " quorum=" + r.quorum + " timeout="
            + (timeout != null ? timeout : r.timeoutNs == SyncConfig.NO_TIMEOUT ? "none" : (r.timeoutNs / 1e6) + "ms")
            + " late=" + r.lateMode.name().toLowerCase(Locale.ROOT) + "]";
    }
}
