package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** The Java API for policies: builds the same {@link Policy} objects as the text. */
public final class PolicyBuilder {
    private final String name;
    private SyncConfig start = SyncConfig.bsp();
    private final List<Policy.Group> groups = new ArrayList<>();
    private final Map<Integer, SyncConfig> groupStarts = new HashMap<>();
    private final List<Policy.Rule> rules = new ArrayList<>();
    private int smoothing = Policy.DEFAULT_SMOOTHING;
    private Policy.Auto auto;

    private PolicyBuilder(final String name) {
        this.name = name;
    }

    public static PolicyBuilder policy(final String name) {
        return new PolicyBuilder(name);
    }

    public PolicyBuilder start(final SyncConfig config) {
        this.start = config;
        return this;
    }

    /** Declares a worker group ({@code group NAME = W1, W2}); the next free index, in declaration order. */
    public PolicyBuilder group(final String name, final int... workers) {
        if (groups.size() == Policy.MAX_GROUPS) {
            throw new IllegalArgumentException("at most " + Policy.MAX_GROUPS + " groups (besides " + Policy.DEFAULT_GROUP + ")");
        }
        if (name.equals(Policy.DEFAULT_GROUP) || groups.stream().anyMatch(g -> g.name.equals(name))) {
            throw new IllegalArgumentException("group " + name + " is already declared");
        }
        final BitSet set = new BitSet();
        for (final int w : workers) {
            if (w < 0 || groups.stream().anyMatch(g -> g.workers().get(w)) || set.get(w)) {
                throw new IllegalArgumentException("worker " + w + " cannot join group " + name + " (negative or already in a group)");
            }
            set.set(w);
        }
        groups.add(new Policy.Group(name, groups.size() + 1, set));
        return this;
    }

    /** A declared group's start config ({@code start NAME: CONFIG}). */
    public PolicyBuilder start(final String group, final SyncConfig config) {
        groupStarts.put(group(group).index, config);
        return this;
    }

    private Policy.Group group(final String name) {
        return groups.stream().filter(g -> g.name.equals(name)).findFirst()
            .orElseThrow(() -> new IllegalArgumentException("unknown group '" + name + "'"));
    }

    /** slowdown(worker) reads the median of each worker's last {@code samples} compute times ({@code smooth N}). */
    public PolicyBuilder smooth(final int samples) {
        this.smoothing = Policy.checkSmoothing(samples);
        return this;
    }

    /** The controller chooses the config itself, keeping at least {@code floorPercent}% of the samples ({@code auto floor P%}). */
    public PolicyBuilder auto(final int floorPercent) {
        this.auto = new Policy.Auto(floorPercent);
        return this;
    }

    /** Begins a rule: {@code when(LAG, GE, 2).forRounds(3).then(ssp(4))}. */
    public RuleBuilder when(final Policy.Metric metric, final Policy.Comparator comparator, final double threshold) {
        return new RuleBuilder(metric, comparator, threshold);
    }

    /** Begins a rule on the failure detector: {@code whenFailed().thenExclude(DROP)} ({@code when failed(worker) then ...}). */
    public RuleBuilder whenFailed() {
        return when(Policy.Metric.FAILED, Policy.Comparator.EQ, 1);
    }

    public Policy build() {
        return new Policy(name, start, groups, groupStarts, rules, smoothing, auto);
    }

    /** One rule under construction. */
    public final class RuleBuilder {
        private final Policy.Metric metric;
        private final Policy.Comparator comparator;
        private final double threshold;
        private int rounds = 1;
        private SyncConfig in;
        private Policy.Group inGroup;

        private RuleBuilder(final Policy.Metric metric, final Policy.Comparator comparator, final double threshold) {
            this.metric = metric;
            this.comparator = comparator;
            this.threshold = threshold;
        }

        public RuleBuilder forRounds(final int n) {
            if (n < 1) {
                throw new IllegalArgumentException("for N rounds needs N >= 1, was " + n);
            }
            this.rounds = n;
            return this;
        }

        /** Applies the rule only while the job's base config is {@code config} ({@code in CONFIG}). */
        public RuleBuilder in(final SyncConfig config) {
            if (metric.perWorker()) {
                throw new IllegalArgumentException("'in CONFIG' guards config rules; a per-worker rule applies in every config");
            }
            this.in = config;
            return this;
        }

        /** Applies the rule only while a declared group's base config is {@code config} ({@code in NAME: CONFIG}). */
        public RuleBuilder in(final String group, final SyncConfig config) {
            in(config);
            this.inGroup = group(group);
            return this;
        }

        public PolicyBuilder then(final SyncConfig config) {
            return add(Policy.Action.config(config));
        }

        /** Sets a declared group's config ({@code then NAME: CONFIG}). */
        public PolicyBuilder then(final String group, final SyncConfig config) {
            return add(Policy.Action.config(group(group), config));
        }

        public PolicyBuilder thenExclude(final LateMode lateMode) {
            return add(Policy.Action.exclude(lateMode));
        }

        public PolicyBuilder thenInclude() {
            return add(Policy.Action.include());
        }

        private PolicyBuilder add(final Policy.Action action) {
            if (action.kind != Policy.Action.Kind.CONFIG && !metric.perWorker()) {
                throw new IllegalArgumentException(action + " needs a per-worker condition such as slowdown(worker)");
            }
            rules.add(new Policy.Rule(metric, comparator, threshold, rounds, inGroup, in, action, rules.size() + 1));
            return PolicyBuilder.this;
        }
    }
}
