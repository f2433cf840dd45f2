package io.serene.controlplane;

import io.serene.protocol.Status;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;

/**
 * Evaluates a {@link Policy} on telemetry, once per released round, and installs the resulting
 * sync config through the hot-swap mechanism: from the earliest round the switch allows. A rule
 * fires when its condition held for its last N evaluations in a row (hysteresis); the first firing
 * config rule (in file order) sets its group's config, and per-worker rules exclude or include the
 * worker they name. Each worker group (the policy's declared groups and the default group) has its
 * own base config and its own entries on the switch. Every change is logged with its reason and
 * first round.
 */
public final class Controller {
    /** How many of the last round times the typical round time is read from (their lower quartile). */
    static final int ROUND_TIME_WINDOW = 16;
    /** How far (a share) the lower quartile moves before relative timeouts are installed again. */
    static final double RETIME_SHARE = 0.2;

    /**
     * What the controller needs from the switch (in-process: the pipeline; remote: the RPC client).
     * Implementations pass calls through; a TOO_EARLY answer (a worker moved on between reading the
     * earliest round and installing) is handled by the controller alone.
     */
    public interface SwitchControl {
        int earliestSwapRound();

        /** Applies a write the controller decided (an INSTALL of a group's sync_config entry); the switch's result code. */
        Status write(TableWrite write);
    }

    /** What the controller sees after a round's release ({@link ControlLoop} builds it from a {@link TelemetrySample}). */
    public static final class Telemetry {
        public int releasedRound;
        /** When R passed {@link #releasedRound}, on the switch's clock (-1: not known). */
        public long releasedAtNs = -1;
        /** Per worker: the highest round it contributed to (lag = the fastest clock minus R, see {@link Policy.Metric#LAG}). */
        public int[] clocks;
        /** Per worker: its last iteration's compute time. */
        public long[] iterationNs;
        /** Per worker: its last finished round, with its compute time and arrival offset there (NONE: not read). */
        public FinishedRounds finished = FinishedRounds.NONE;
        /** The time per released round since the last evaluation, from the switch's release times (0: not known yet). */
        public long roundTimeNs;
        public double waitingShare;
        public double staleness;
        /** The workers the failure detector reports failed (silent): failed(worker). */
        public BitSet failed = new BitSet();
    }

    /** One change of config: the table write that made it, when it applies, what it replaced, and why. */
    public static final class Decision {
        public final int releasedRound;
        public final int firstRound;
        public final String from;
        public final String to;
        public final String reason;
        public final TableWrite write;
        /** An auto policy's: what the model predicted of the config chosen and of the runner-up (null for a rule's decision). */
        public final GoodputModel.Estimate predicted;
        public final GoodputModel.Estimate runnerUp;
        /** An auto decision's measured outcome: the mean round time over its first 8 rounds (ns; 0 until measured). */
        public volatile double measuredRoundNs;

        Decision(final int releasedRound, final TableWrite write, final String from, final String to, final String reason,
                 final AutoChooser.Choice choice) {
            this.predicted = choice == null ? null : choice.chosen();
            this.runnerUp = choice == null ? null : choice.runnerUp();
            this.releasedRound = releasedRound;
            this.firstRound = ((SyncConfigEntry) write.entry()).firstRound();
            this.write = write;
            this.from = from;
            this.to = to;
            this.reason = reason;
        }

        @Override
        public String toString() {
            return "round " + firstRound + ": " + from + " -> " + to + " (" + reason + ", decided at R=" + releasedRound + ")";
        }
    }

    private final Policy policy;
    /** The policy compiled for this job: each rule with the group and config it writes. */
    private final List<PolicyCompiler.CompiledRule> rules;
    private final int job;
    private final int workers;
    private final SwitchControl control;
    private final int[] streak;
    private final int[][] workerStreak;
    private final BitSet excluded = new BitSet();
    private LateMode excludeLate = LateMode.FOLD;
    /** Per worker its group; per group: the members, the base config (rules set it), the config installed on the switch. */
    private final int[] groupOf;
    private final BitSet[] members;
    private final SyncConfig[] base;
    private final SyncConfig[] installed;
    private final List<Decision> decisions = new ArrayList<>();
    /** Whether a change could not be installed (TOO_EARLY twice): the next evaluation installs it again. */
    private boolean unsynced;
    private String unsyncedReason;
    /** Per worker, its last compute-time samples: slowdown(worker) uses the median of the last {@link Policy#smoothing()}. */
    private final ComputeHistory history;
    private final long[] smoothed;
    /** An auto policy's chooser (null for a policy of rules), and the round times measured since its last change. */
    private final AutoChooser auto;
    /** An auto policy's: per worker, the compute times and arrival offsets of its finished rounds, paired (null for rules). */
    private final ComputeHistory finishedCompute;
    private final ComputeHistory finishedOffsets;
    private int sinceChangeRounds;
    /** The time of each of the last rounds since the change (ns; a ring of half the window): what the chooser calibrates on. */
    private final long[] recentRoundNs = new long[AutoChooser.WINDOW / 2];
    /** The first rounds' after the last change (ns in all; the outcome measured). */
    private double outcomeNs;
    private int lastReleased = -1;
    /** The last auto decision whose outcome is still being measured (null: none). */
    private Decision measuring;
    /** The last round times, ns: a relative timeout ({@code timeout(30%)}) is a share of their lower quartile. */
    private final long[] roundTimes = new long[ROUND_TIME_WINDOW];
    private int roundTimesSeen;
    /** The typical round time relative timeouts are installed against (0: none measured yet). */
    private long typicalRoundNs;

    /** A controller of job {@code job} of {@code workers} workers; its decisions go to {@code control} as table writes. */
    public Controller(final Policy policy, final int job, final int workers, final SwitchControl control) {
        this.policy = policy;
        // fails naming the start or the line whose config does not fit the job or a group
        this.rules = PolicyCompiler.compile(policy, job, workers);
        this.job = job;
        this.workers = workers;
        this.control = control;
        final int groups = policy.groups().size() + 1;
        this.groupOf = policy.groupOf(workers);
        this.members = policy.members(workers);
        this.base = new SyncConfig[groups];
        this.installed = new SyncConfig[groups];
        for (int g = 0; g < groups; g++) {
            base[g] = policy.start(g);
            installed[g] = effective(g, policy.start(g));
        }
        this.streak = new int[policy.rules().size()];
        this.workerStreak = new int[policy.rules().size()][workers];
        this.auto = policy.auto() == null ? null : new AutoChooser(workers, policy.auto().floorPercent(), job);
        this.history = new ComputeHistory(workers, auto == null ? policy.smoothing() : AutoChooser.WINDOW);
        this.finishedCompute = auto == null ? null : new ComputeHistory(workers, AutoChooser.WINDOW);
        this.finishedOffsets = auto == null ? null : new ComputeHistory(workers, AutoChooser.WINDOW);
        this.smoothed = new long[workers];
    }

    /**
     * The workers grow their batches while rounds count fewer contributions, at most {@code factor}
     * times (serene train's --rebalance): an auto policy's model counts a round's samples so.
     */
    public void rebalancedBatches(final double factor) {
        if (auto != null) {
            auto.rebalancedBatches(factor);
        }
    }

    /** The config the default group starts with (install it as the switch's default before the first round). */
    public SyncConfig initial() {
        return policy.start();
    }

    /** Each worker's group (0: the default group), for the switch's worker_group table. */
    public int[] groupOf() {
        return groupOf.clone();
    }

    public List<Decision> decisions() {
        return List.copyOf(decisions);
    }

    /**
     * The job was formed anew from its workers' checkpoints: the switch holds the policy's start
     * configs again, so the next evaluation installs the configs this controller had decided on
     * (exclusions included) from the earliest round the new job allows.
     */
    public void jobRebuilt() {
        for (int g = 0; g < installed.length; g++) {
            // what the new job holds: the start config as the switch took it, no exclusion applied
            installed[g] = policy.start(g);
        }
        unsynced = true;
        unsyncedReason = "the job was rebuilt from checkpoints: its configs installed again";
    }

    /** Evaluates every rule on this round's telemetry and installs a change if one fired. */
    public void onRound(final Telemetry t) {
        smooth(t);
        if (auto != null) {
            autoRound(t);
            return;
        }
        final boolean retimed = retime(t.roundTimeNs);
        String reason = null;
        for (int i = 0; i < rules.size(); i++) {
            final PolicyCompiler.CompiledRule compiled = rules.get(i);
            final Policy.Rule rule = compiled.rule;
            if (rule.metric.perWorker()) {
                reason = perWorker(i, rule, t, reason);
                continue;
            }
            if (rule.in != null && !rule.in.equals(base[rule.inGroup])) {
                streak[i] = 0;
                continue;
            }
            final double value = value(rule.metric, t);
            streak[i] = rule.comparator.test(value, rule.threshold) ? streak[i] + 1 : 0;
            final int g = compiled.group;
            if (streak[i] >= rule.rounds && reason == null && !compiled.config.equals(base[g])
                && fits(g, effective(g, compiled.config))) {
                base[g] = compiled.config;
                reason = rule.condition() + " (" + rule.metric.text + " = " + round2(value) + ")";
                Arrays.fill(streak, 0);
            }
        }
        if (reason == null && !retimed && !unsynced) {
            return;
        }
        if (reason == null && unsynced && !retimed) {
            reason = unsyncedReason;
        }
        if (reason == null) {
            reason = "typical round time " + round2(typicalRoundNs / 1e6) + " ms (the lower quartile of the last "
                + Math.min(roundTimesSeen, ROUND_TIME_WINDOW) + ")";
        }
        install(t, reason, null);
    }

    /**
     * An auto policy's evaluation: measures the round times since the last change (and the last
     * decision's outcome), then lets the chooser replay the window of compute times.
     */
    private void autoRound(final Telemetry t) {
        final int advanced = lastReleased < 0 ? 0 : t.releasedRound - lastReleased;
        lastReleased = t.releasedRound;
        for (int i = 0; t.roundTimeNs > 0 && i < advanced; i++) {
            if (sinceChangeRounds < AutoChooser.OUTCOME_ROUNDS) {
                outcomeNs += t.roundTimeNs;
            }
            recentRoundNs[sinceChangeRounds++ % recentRoundNs.length] = t.roundTimeNs;
        }
        if (measuring != null && sinceChangeRounds >= AutoChooser.OUTCOME_ROUNDS) {
            measuring.measuredRoundNs = outcomeNs / AutoChooser.OUTCOME_ROUNDS;
            measuring = null;
        }
        final boolean measured = t.finished.workers() == workers;
        if (measured) {
            finishedCompute.record(t.finished.rounds(), t.finished.computeNs());
            finishedOffsets.record(t.finished.rounds(), t.finished.offsetNs());
        }
        final int rounds = Math.min(AutoChooser.WINDOW, (measured ? finishedCompute : history).available()) / 2 * 2;
        // the mean round time over the rounds the chooser judges on (the newer half of its window), as
        // far as they ran under the installed config: the overhead is calibrated on the same rounds
        // it is replayed on (older ones, JIT warm-up included, would inflate it)
        final int recent = Math.min(Math.min(sinceChangeRounds, recentRoundNs.length), Math.max(AutoChooser.MIN_WINDOW / 2, rounds / 2));
        double sum = 0;
        for (int i = 1; i <= recent; i++) {
            sum += recentRoundNs[(sinceChangeRounds - i) % recentRoundNs.length];
        }
        final double roundNs = recent >= AutoChooser.MIN_WINDOW / 2 ? sum / recent : 0;
        if (rounds < AutoChooser.MIN_WINDOW || measuring != null && !unsynced) {
            // the next change waits for the last one's outcome: the round times it is calibrated on
            return;
        }
        // the switch's pairs of compute time and arrival offset where it sends them, else compute times alone
        final GoodputModel.Rounds window = measured ? GoodputModel.Rounds.measured(finishedCompute.window(rounds), finishedOffsets.window(rounds))
            : GoodputModel.Rounds.of(history.window(rounds));
        final AutoChooser.Choice choice = auto.evaluate(window, installed[0], roundNs);
        if (choice != null) {
            base[0] = choice.chosen().config();
        }
        if (choice != null || unsynced) {
            install(t, choice == null ? unsyncedReason : choice.reason(), choice);
        }
    }

    /** Installs every group's effective config that differs from the one on the switch, from the earliest round allowed. */
    private void install(final Telemetry t, final String reason, final AutoChooser.Choice choice) {
        int first = -1;
        unsynced = false;
        for (int g = 0; g < base.length; g++) {
            final SyncConfig effective = effective(g, base[g]);
            if (effective.equals(installed[g])) {
                continue;
            }
            // every group that changes in one evaluation changes from the same round
            first = first < 0 ? control.earliestSwapRound() : first;
            TableWrite write = PolicyCompiler.install(job, g, first, effective);
            Status status = control.write(write);
            if (status == Status.TOO_EARLY) {
                // a worker moved on since the earliest round was read: read it again, once
                first = control.earliestSwapRound();
                write = PolicyCompiler.install(job, g, first, effective);
                status = control.write(write);
            }
            if (status == Status.OK) {
                final String prefix = g == 0 ? "" : policy.groupName(g) + ": ";
                final Decision d = new Decision(t.releasedRound, write, prefix + installed[g], prefix + effective, reason, choice);
                if (choice != null) {
                    measuring = d;
                    sinceChangeRounds = 0;
                    outcomeNs = 0;
                }
                decisions.add(d);
                installed[g] = effective;
            } else if (status == Status.TOO_EARLY) {
                unsynced = true;
                unsyncedReason = reason;
            }
        }
    }

    /**
     * Each worker's compute time as per-worker rules see it: the median of its last samples, one per
     * round it contributed to, so one noisy measurement (or one slow round) neither starts nor breaks
     * a streak (lag reads the raw values: a transient straggler is one sample long).
     */
    private void smooth(final Telemetry t) {
        history.record(t.clocks, t.iterationNs);
        for (int w = 0; w < workers; w++) {
            smoothed[w] = history.median(w, policy.smoothing());
        }
    }

    /**
     * Takes a round time in and moves the typical round time, the lower quartile of the last
     * {@value #ROUND_TIME_WINDOW} (the rounds no worker held up, when most are; one slow round moves
     * nothing), once it is {@value #RETIME_SHARE} away from the one relative timeouts were installed
     * against. Returns whether it moved.
     */
    private boolean retime(final long roundTimeNs) {
        if (roundTimeNs <= 0) {
            return false;
        }
        roundTimes[roundTimesSeen % ROUND_TIME_WINDOW] = roundTimeNs;
        roundTimesSeen++;
        final long[] recent = Arrays.copyOf(roundTimes, Math.min(roundTimesSeen, ROUND_TIME_WINDOW));
        Arrays.sort(recent);
        final long quartile = recent[(recent.length - 1) / 4];
        if (typicalRoundNs > 0 && Math.abs(quartile - typicalRoundNs) <= RETIME_SHARE * typicalRoundNs) {
            return false;
        }
        typicalRoundNs = quartile;
        return true;
    }

    private String perWorker(final int i, final Policy.Rule rule, final Controller.Telemetry t, final String reason) {
        String why = reason;
        final double typical = typical();
        final boolean failedRule = rule.metric == Policy.Metric.FAILED;
        for (int w = 0; w < workers; w++) {
            final double slowdown = typical <= 0 ? 1.0 : smoothed[w] / typical;
            final double value = failedRule ? (t.failed.get(w) ? 1 : 0) : slowdown;
            final String seen = failedRule ? (t.failed.get(w) ? " (silent)" : " (heard from)") : " (slowdown = " + round2(slowdown) + ")";
            workerStreak[i][w] = rule.comparator.test(value, rule.threshold) ? workerStreak[i][w] + 1 : 0;
            if (workerStreak[i][w] < rule.rounds) {
                continue;
            }
            workerStreak[i][w] = 0;
            if (rule.action.kind == Policy.Action.Kind.EXCLUDE && !excluded.get(w)) {
                excluded.set(w);
                final int g = groupOf[w];
                if (!fits(g, effective(g, base[g])) || excluded.cardinality() >= workers) {
                    excluded.clear(w);
                    continue;
                }
                excludeLate = rule.action.lateMode;
                why = why == null ? "worker " + w + ": " + rule.condition() + seen : why;
            } else if (rule.action.kind == Policy.Action.Kind.INCLUDE && excluded.get(w)) {
                excluded.clear(w);
                why = why == null ? "worker " + w + ": " + rule.condition() + seen : why;
            }
        }
        return why;
    }

    /**
     * A typical worker's compute time, the reference of slowdown(worker): the median over the workers
     * the barriers wait for. An excluded worker skips rounds, so its samples lag: with 4 workers, a
     * straggler that moved on would still look slow, and with the one that took its place in the
     * median of all 4 it would halve the new one's slowdown and hide it for rounds.
     */
    private double typical() {
        final long[] waitedFor = new long[workers - excluded.cardinality()];
        int n = 0;
        for (int w = 0; w < workers; w++) {
            if (!excluded.get(w)) {
                waitedFor[n++] = smoothed[w];
            }
        }
        return median(waitedFor);
    }

    /** A group's config as the switch gets it ({@link PolicyCompiler#entryConfig}): its excluded members, the typical round time. */
    private SyncConfig effective(final int group, final SyncConfig config) {
        final BitSet out = (BitSet) excluded.clone();
        out.and(members[group]);
        return PolicyCompiler.entryConfig(config, out, excludeLate, typicalRoundNs);
    }

    private boolean fits(final int group, final SyncConfig config) {
        return config.timeoutPercent() == 0 && config.misfit(workers, members[group]) == null;
    }

    private double value(final Policy.Metric metric, final Telemetry t) {
        switch (metric) {
            case LAG: {
                // how far the fastest worker is ahead of R, or would be without the barrier: the
                // rounds a typical (median) worker could finish while the slowest it waits for
                // (an excluded worker holds nobody back) finishes one
                int max = -1;
                for (final int c : t.clocks) {
                    max = Math.max(max, c);
                }
                long slowest = 0;
                for (int w = 0; w < t.iterationNs.length; w++) {
                    if (!excluded.get(w)) {
                        slowest = Math.max(slowest, t.iterationNs[w]);
                    }
                }
                final double typical = median(t.iterationNs);
                final double blocked = typical <= 0 ? 0 : Math.floor(slowest / typical) - 1;
                return Math.max(max - t.releasedRound, blocked);
            }
            case ROUND_TIME:
                return t.roundTimeNs / 1e6;
            case ROUND:
                return t.releasedRound;
            case WAITING_SHARE:
                return t.waitingShare;
            default:
                return t.staleness;
        }
    }

    private static double median(final long[] values) {
        final long[] sorted = values.clone();
        Arrays.sort(sorted);
        final int n = sorted.length;
        return n == 0 ? 0 : n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
    }

    private static String round2(final double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
