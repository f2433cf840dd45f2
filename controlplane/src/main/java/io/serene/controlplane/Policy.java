package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.TableModel;

import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A parsed policy: a name, worker groups, a start config per group and rules, each "when a metric
 * compares to a threshold for N rounds then do an action", in priority order (first in the file
 * first). Group 0, {@code default}, holds every worker no declared group names; declared groups are
 * 1, 2, ... in declaration order (the switch's worker_group values). Immutable; built by
 * {@link PolicyParser} or the fluent {@link PolicyBuilder}.
 */
public final class Policy {
    /** The implicit group of every worker no declared group names. */
    public static final String DEFAULT_GROUP = "default";
    /** Groups a policy may declare (the switch holds 4 per job, one of them the default). */
    public static final int MAX_GROUPS = TableModel.GROUPS - 1;
    /** Compute-time samples in the median slowdown(worker) reads, unless the policy says {@code smooth N}. */
    public static final int DEFAULT_SMOOTHING = 5;
    /** The most samples {@code smooth N} may name. */
    public static final int MAX_SMOOTHING = 15;

    /** A declared worker group: its name, its index on the switch (1..), its workers. */
    public static final class Group {
        public final String name;
        public final int index;
        private final BitSet workers;

        public Group(final String name, final int index, final BitSet workers) {
            this.name = Objects.requireNonNull(name);
            this.index = index;
            this.workers = (BitSet) workers.clone();
        }

        public BitSet workers() {
            return (BitSet) workers.clone();
        }

        @Override
        public boolean equals(final Object o) {
            return o instanceof Group && ((Group) o).name.equals(name) && ((Group) o).index == index
                && ((Group) o).workers.equals(workers);
        }

        @Override
        public int hashCode() {
            return Objects.hash(name, index, workers);
        }

        @Override
        public String toString() {
            return "group " + name + " = " + workers.stream().mapToObj(Integer::toString).reduce((a, b) -> a + ", " + b).orElse("");
        }
    }
    /** What a rule looks at. */
    public enum Metric {
        /**
         * Fastest worker's clock minus R, or, when a barrier holds it back, the rounds a median worker could
         * finish during the last iteration of the slowest worker it waits for (slowest / median - 1), whichever is larger.
         */
        LAG("lag", false),
        /** A worker's compute time (the median of its last samples) over a typical worker's (the median of the workers the barrier waits for). */
        SLOWDOWN("slowdown(worker)", true),
        /**
         * 1 while the failure detector reports the worker failed (silent for many round times while its
         * job needs it or goes on without it; serene train's --silence-rounds), else 0. In a rule,
         * {@code failed(worker)} alone means {@code failed(worker) == 1}.
         */
        FAILED("failed(worker)", true),
        /** Milliseconds between the last two advances of R. */
        ROUND_TIME("round_time", false),
        /** The round just released (R): {@code when round >= 20} acts once the job is past its first rounds. */
        ROUND("round", false),
        /** Share of the last round the workers spent waiting (0..1). */
        WAITING_SHARE("waiting_share", false),
        /** Mean staleness of the round starts since the last evaluation. */
        STALENESS("staleness", false);

        final String text;
        final boolean perWorker;

        Metric(final String text, final boolean perWorker) {
            this.text = text;
            this.perWorker = perWorker;
        }

        public boolean perWorker() {
            return perWorker;
        }
    }

    /** A comparison of a metric with a threshold. */
    public enum Comparator {
        GE(">="), LE("<="), GT(">"), LT("<"), EQ("==");

        final String text;

        Comparator(final String text) {
            this.text = text;
        }

        boolean test(final double value, final double threshold) {
            switch (this) {
                case GE:
                    return value >= threshold;
                case LE:
                    return value <= threshold;
                case GT:
                    return value > threshold;
                case LT:
                    return value < threshold;
                default:
                    return value == threshold;
            }
        }
    }

    /** What a rule does: set a group's config, or exclude or include the worker its condition named. */
    public static final class Action {
        public enum Kind { CONFIG, EXCLUDE, INCLUDE }

        public final Kind kind;
        public final SyncConfig config;
        /** The group whose config a CONFIG action sets (0: the default group). */
        public final int group;
        /** Its name, for text ({@code slow: ssp:2}); null for the default group. */
        public final String groupName;
        public final LateMode lateMode;

        private Action(final Kind kind, final SyncConfig config, final int group, final String groupName, final LateMode lateMode) {
            this.kind = kind;
            this.config = config;
            this.group = group;
            this.groupName = groupName;
            this.lateMode = lateMode;
        }

        public static Action config(final SyncConfig config) {
            return new Action(Kind.CONFIG, Objects.requireNonNull(config), 0, null, null);
        }

        /** Sets a declared group's config. */
        public static Action config(final Group group, final SyncConfig config) {
            return new Action(Kind.CONFIG, Objects.requireNonNull(config), group.index, group.name, null);
        }

        public static Action exclude(final LateMode lateMode) {
            return new Action(Kind.EXCLUDE, null, 0, null, lateMode);
        }

        public static Action include() {
            return new Action(Kind.INCLUDE, null, 0, null, null);
        }

        @Override
        public boolean equals(final Object o) {
            return o instanceof Action && ((Action) o).kind == kind && Objects.equals(((Action) o).config, config)
                && ((Action) o).group == group && ((Action) o).lateMode == lateMode;
        }

        @Override
        public int hashCode() {
            return Objects.hash(kind, config, group, lateMode);
        }

        @Override
        public String toString() {
            switch (kind) {
                case EXCLUDE:
                    return "exclude(worker)" + (lateMode == LateMode.DROP ? " drop" : " fold");
                case INCLUDE:
                    return "include(worker)";
                default:
                    return (groupName == null ? "" : groupName + ": ") + config;
            }
        }
    }

    /** when METRIC CMP THRESHOLD for ROUNDS rounds [in CONFIG] then ACTION. */
    public static final class Rule {
        public final Metric metric;
        public final Comparator comparator;
        public final double threshold;
        public final int rounds;
        /** The base config the rule applies in (null: in any). */
        public final SyncConfig in;
        /** The group whose base config {@link #in} is compared with (0: the default group). */
        public final int inGroup;
        private final String inGroupName;
        public final Action action;
        public final int line;

        public Rule(final Metric metric, final Comparator comparator, final double threshold, final int rounds,
                    final Action action, final int line) {
            this(metric, comparator, threshold, rounds, null, action, line);
        }

        public Rule(final Metric metric, final Comparator comparator, final double threshold, final int rounds,
                    final SyncConfig in, final Action action, final int line) {
            this(metric, comparator, threshold, rounds, null, in, action, line);
        }

        /** A rule whose guard compares a declared group's base config ({@code in slow: ssp(2)}). */
        public Rule(final Metric metric, final Comparator comparator, final double threshold, final int rounds,
                    final Group inGroup, final SyncConfig in, final Action action, final int line) {
            this.metric = metric;
            this.comparator = comparator;
            this.threshold = threshold;
            this.rounds = rounds;
            this.in = in;
            this.inGroup = inGroup == null ? 0 : inGroup.index;
            this.inGroupName = inGroup == null ? null : inGroup.name;
            this.action = action;
            this.line = line;
        }

        public String condition() {
            return metric.text + " " + comparator.text + " " + formatNumber(threshold) + " for " + rounds + " rounds"
                + (in == null ? "" : " in " + (inGroupName == null ? "" : inGroupName + ": ") + in);
        }

        @Override
        public boolean equals(final Object o) {
            if (!(o instanceof Rule)) {
                return false;
            }
            final Rule r = (Rule) o;
            return metric == r.metric && comparator == r.comparator && threshold == r.threshold && rounds == r.rounds
                && Objects.equals(in, r.in) && inGroup == r.inGroup && action.equals(r.action);
        }

        @Override
        public int hashCode() {
            return Objects.hash(metric, comparator, threshold, rounds, in, inGroup, action);
        }

        @Override
        public String toString() {
            return "when " + condition() + " then " + action;
        }
    }

    /**
     * {@code auto [floor P%]}: the controller picks the config from a model of the job (AutoChooser)
     * instead of rules, keeping at least P% of the workers' samples in each round.
     */
    public record Auto(int floorPercent) {
        /** The share of the samples {@code auto} keeps unless the policy says {@code floor P%}. */
        public static final int DEFAULT_FLOOR_PERCENT = 75;

        public Auto {
            if (floorPercent < 1 || floorPercent > 100) {
                throw new IllegalArgumentException("auto's floor must be 1% to 100% of the samples, was " + floorPercent + "%");
            }
        }

        @Override
        public String toString() {
            return "auto" + (floorPercent == DEFAULT_FLOOR_PERCENT ? "" : " floor " + floorPercent + "%");
        }
    }

    /** The name {@code --policy} and experiment files give the built-in {@code auto} policy. */
    public static final String AUTO = "auto";

    private final String name;
    private final SyncConfig start;
    private final List<Group> groups;
    private final Map<Integer, SyncConfig> groupStarts;
    private final List<Rule> rules;
    private final int smoothing;
    private final Auto auto;

    Policy(final String name, final SyncConfig start, final List<Rule> rules) {
        this(name, start, List.of(), Map.of(), rules, DEFAULT_SMOOTHING, null);
    }

    Policy(final String name, final SyncConfig start, final List<Group> groups, final Map<Integer, SyncConfig> groupStarts,
           final List<Rule> rules, final int smoothing, final Auto auto) {
        if (auto != null && (!rules.isEmpty() || !groups.isEmpty())) {
            throw new IllegalArgumentException("an auto policy chooses the config itself: it has no groups and no when rules");
        }
        this.auto = auto;
        this.name = name;
        this.start = start;
        this.groups = List.copyOf(groups);
        this.groupStarts = Map.copyOf(groupStarts);
        this.rules = List.copyOf(rules);
        this.smoothing = checkSmoothing(smoothing);
        checkStart(DEFAULT_GROUP, start);
        this.groupStarts.forEach((g, c) -> checkStart(groupName(g), c));
    }

    /** A start config is installed before any round is measured: it cannot have a relative timeout. */
    private static void checkStart(final String group, final SyncConfig config) {
        if (config.timeoutPercent() != 0) {
            throw new IllegalArgumentException("group " + group + " starts with " + config + ": a relative timeout needs"
                + " measured round times; start with an absolute one or none and set it with a rule (when round >= 1 then ...)");
        }
    }

    /** {@code smooth N}'s range, 1 to {@value #MAX_SMOOTHING}: returns N, or fails naming it. */
    static int checkSmoothing(final int samples) {
        if (samples < 1 || samples > MAX_SMOOTHING) {
            throw new IllegalArgumentException("smooth N needs 1 <= N <= " + MAX_SMOOTHING + ", was " + samples);
        }
        return samples;
    }

    public String name() {
        return name;
    }

    /** The default group's start config (and every declared group's without a start of its own). */
    public SyncConfig start() {
        return start;
    }

    /** A group's start config (0: the default group). */
    public SyncConfig start(final int group) {
        return groupStarts.getOrDefault(group, start);
    }

    /** The declared groups, in declaration order (index 1, 2, ...). */
    public List<Group> groups() {
        return groups;
    }

    /** A group's name: {@value #DEFAULT_GROUP} for 0. */
    public String groupName(final int group) {
        return group == 0 ? DEFAULT_GROUP : groups.get(group - 1).name;
    }

    /**
     * Each worker's group in a job of {@code workers} workers; fails naming a declared worker the job
     * does not have.
     */
    public int[] groupOf(final int workers) {
        final int[] of = new int[workers];
        for (final Group g : groups) {
            final BitSet w = g.workers();
            if (w.length() > workers) {
                throw new IllegalArgumentException("group " + g.name + " names worker " + (w.length() - 1)
                    + ", not in a job of " + workers + " workers");
            }
            w.stream().forEach(i -> of[i] = g.index);
        }
        return of;
    }

    /** Each group's members in a job of {@code workers} workers (index: the group; 0, the default group, first). */
    public BitSet[] members(final int workers) {
        final int[] of = groupOf(workers);
        final BitSet[] members = new BitSet[groups.size() + 1];
        for (int g = 0; g < members.length; g++) {
            members[g] = new BitSet();
        }
        for (int w = 0; w < workers; w++) {
            members[of[w]].set(w);
        }
        return members;
    }

    public List<Rule> rules() {
        return rules;
    }

    /**
     * How many of a worker's last compute-time samples slowdown(worker) takes the median of
     * ({@code smooth N}; {@value #DEFAULT_SMOOTHING} unless the policy says; 1: the last sample alone).
     */
    public int smoothing() {
        return smoothing;
    }

    /** The {@code auto} statement: the controller chooses the config from a model of the job; null for a policy of rules. */
    public Auto auto() {
        return auto;
    }

    /** The built-in {@code auto} policy: {@code policy auto}, {@code auto}, starting with BSP. */
    public static Policy auto(final int floorPercent) {
        return new Policy(AUTO, SyncConfig.bsp(), List.of(), Map.of(), List.of(), DEFAULT_SMOOTHING, new Auto(floorPercent));
    }

    @Override
    public boolean equals(final Object o) {
        return o instanceof Policy && ((Policy) o).name.equals(name) && ((Policy) o).start.equals(start)
            && ((Policy) o).groups.equals(groups) && ((Policy) o).groupStarts.equals(groupStarts)
            && ((Policy) o).rules.equals(rules) && ((Policy) o).smoothing == smoothing && Objects.equals(((Policy) o).auto, auto);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, start, groups, groupStarts, rules, smoothing, auto);
    }

    @Override
    public String toString() {
        final StringBuilder sb = new StringBuilder("policy ").append(name);
        groups.forEach(g -> sb.append('\n').append(g));
        sb.append("\nstart ").append(start);
        new TreeMap<>(groupStarts).forEach((g, c) -> sb.append("\nstart ").append(groupName(g)).append(": ").append(c));
        if (smoothing != DEFAULT_SMOOTHING) {
            sb.append("\nsmooth ").append(smoothing);
        }
        if (auto != null) {
            sb.append('\n').append(auto);
        }
        rules.forEach(r -> sb.append('\n').append(r));
        return sb.toString();
    }

    static String formatNumber(final double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
