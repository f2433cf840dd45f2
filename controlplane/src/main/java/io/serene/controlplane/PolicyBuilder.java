package io.serene.controlplane;

import io.serene.protocol.LateMode;
import io.serene.protocol.SyncConfig;

import java.util.ArrayList;
import java.util.List;

/** The Java API for policies: builds the same {@link Policy} objects as the text. */
public final class PolicyBuilder {
    private final String name;
    private SyncConfig start = SyncConfig.bsp();
    private final List<Policy.Rule> rules = new ArrayList<>();

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

    /** Begins a rule: {@code when(LAG, GE, 2).forRounds(3).then(ssp(4))}. */
    public RuleBuilder when(final Policy.Metric metric, final Policy.Comparator comparator, final double threshold) {
        return new RuleBuilder(metric, comparator, threshold);
    }

    public Policy build() {
        return new Policy(name, start, rules);
    }

    /** One rule under construction. */
    public final class RuleBuilder {
        private final Policy.Metric metric;
        private final Policy.Comparator comparator;
        private final double threshold;
        private int rounds = 1;
        private SyncConfig in;

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

        public PolicyBuilder then(final SyncConfig config) {
            return add(Policy.Action.config(config));
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
            rules.add(new Policy.Rule(metric, comparator, threshold, rounds, in, action, rules.size() + 1));
            return PolicyBuilder.this;
        }
    }
}
