package io.serene.controlplane;

import io.serene.protocol.LateMode;
import io.serene.protocol.SyncConfig;

import java.util.List;
import java.util.Objects;

/**
 * A parsed policy: a name, a start config and rules, each "when a metric compares to a threshold
 * for N rounds then do an action", in priority order (first in the file first). Immutable; built by
 * {@link PolicyParser} or the fluent {@link PolicyBuilder}.
 */
public final class Policy {
    /** What a rule looks at. */
    public enum Metric {
        /**
         * Fastest worker's clock minus R, or, when a barrier holds it back, the rounds it could
         * finish during the slowest worker's last iteration (slowest / fastest - 1), whichever is larger.
         */
        LAG("lag", false),
        /** A worker's last iteration time over the median of all workers'. */
        SLOWDOWN("slowdown(worker)", true),
        /** Milliseconds between the last two advances of R. */
        ROUND_TIME("round_time", false),
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

    /** What a rule does: set the job's config, or exclude or include the worker its condition named. */
    public static final class Action {
        public enum Kind { CONFIG, EXCLUDE, INCLUDE }

        public final Kind kind;
        public final SyncConfig config;
        public final LateMode lateMode;

        private Action(final Kind kind, final SyncConfig config, final LateMode lateMode) {
            this.kind = kind;
            this.config = config;
            this.lateMode = lateMode;
        }

        public static Action config(final SyncConfig config) {
            return new Action(Kind.CONFIG, Objects.requireNonNull(config), null);
        }

        public static Action exclude(final LateMode lateMode) {
            return new Action(Kind.EXCLUDE, null, lateMode);
        }

        public static Action include() {
            return new Action(Kind.INCLUDE, null, null);
        }

        @Override
        public boolean equals(final Object o) {
            return o instanceof Action && ((Action) o).kind == kind && Objects.equals(((Action) o).config, config)
                && ((Action) o).lateMode == lateMode;
        }

        @Override
        public int hashCode() {
            return Objects.hash(kind, config, lateMode);
        }

        @Override
        public String toString() {
            switch (kind) {
                case EXCLUDE:
                    return "exclude(worker)" + (lateMode == LateMode.DROP ? " drop" : " fold");
                case INCLUDE:
                    return "include(worker)";
                default:
                    return config.toString();
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
        public final Action action;
        public final int line;

        public Rule(final Metric metric, final Comparator comparator, final double threshold, final int rounds,
                    final Action action, final int line) {
            this(metric, comparator, threshold, rounds, null, action, line);
        }

        public Rule(final Metric metric, final Comparator comparator, final double threshold, final int rounds,
                    final SyncConfig in, final Action action, final int line) {
            this.metric = metric;
            this.comparator = comparator;
            this.threshold = threshold;
            this.rounds = rounds;
            this.in = in;
            this.action = action;
            this.line = line;
        }

        public String condition() {
            return metric.text + " " + comparator.text + " " + formatNumber(threshold) + " for " + rounds + " rounds"
                + (in == null ? "" : " in " + in);
        }

        @Override
        public boolean equals(final Object o) {
            if (!(o instanceof Rule)) {
                return false;
            }
            final Rule r = (Rule) o;
            return metric == r.metric && comparator == r.comparator && threshold == r.threshold && rounds == r.rounds
                && Objects.equals(in, r.in) && action.equals(r.action);
        }

        @Override
        public int hashCode() {
            return Objects.hash(metric, comparator, threshold, rounds, in, action);
        }

        @Override
        public String toString() {
            return "when " + condition() + " then " + action;
        }
    }

    private final String name;
    private final SyncConfig start;
    private final List<Rule> rules;

    Policy(final String name, final SyncConfig start, final List<Rule> rules) {
        this.name = name;
        this.start = start;
        this.rules = List.copyOf(rules);
    }

    public String name() {
        return name;
    }

    public SyncConfig start() {
        return start;
    }

    public List<Rule> rules() {
        return rules;
    }

    @Override
    public boolean equals(final Object o) {
        return o instanceof Policy && ((Policy) o).name.equals(name) && ((Policy) o).start.equals(start)
            && ((Policy) o).rules.equals(rules);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, start, rules);
    }

    @Override
    public String toString() {
        final StringBuilder sb = new StringBuilder("policy ").append(name).append("\nstart ").append(start);
        rules.forEach(r -> sb.append('\n').append(r));
        return sb.toString();
    }

    static String formatNumber(final double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}
