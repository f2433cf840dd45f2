package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

/**
 * The {@code auto} policy's choice (docs/policy.md, "auto"): every round, the last rounds of
 * measured compute times ({@link #WINDOW}) are replayed ({@link GoodputModel}) through each
 * candidate config, and the one with the most goodput among those that keep at least the
 * floor's share of the samples is chosen once it beats the installed config's predicted goodput by
 * {@value #MARGIN_PERCENT}% for {@link #hold} evaluations in a row (fewer, the more it promises); a
 * config that keeps more of the samples than the installed one takes over (after half a window of
 * evaluations) as soon as it promises at least its goodput. Between the two is the hysteresis band: stationary noise moves neither way.
 * Nothing in it is set per scenario: candidates, timeouts and the overhead come from the
 * measurements.
 *
 * <p>Candidates for a job of W workers keeping at least F of them (the floor): BSP; BSP excluding
 * the k slowest (by median compute time) with their late gradients dropped, W - k >= F, where those
 * k finished after all the others in most rounds; fastest-k with drop, k >= F, where the next worker
 * finished more than the per-round overhead after the k-th in most rounds; BSP with a timeout at the
 * 50th, 75th and 90th percentile of how long after a round's first worker the others finished, plus
 * the overhead, with drop; SSP with bounds 1 and 2. Not PSP: its unsampled workers' gradients cost
 * far more than their staleness weights say (2-4 points of accuracy in every scenario measured,
 * docs/results.md), and chosen by the model it lost up to a point and a quarter of the time to 0.80.
 * The overhead (communication and the loop's own work) is one number in the model, but the workers
 * do not all spend it alike (on a shared host they take turns on the processors): a cut closer than
 * it would drop gradients by the order they were sent in, so no candidate cuts that close.
 */
final class AutoChooser {
    /**
     * Rounds of compute times an evaluation reads, at most (fewer early on, at least
     * {@value #MIN_WINDOW}): candidates are drawn from the older half (which workers are slowest,
     * where the timeouts go) and replayed on the newer half, so a config is not judged on the very
     * rounds it was fitted to (a worker unlucky in a window of per-round jitter is not a persistent
     * straggler).
     */
    static final int WINDOW = 32;
    /** The fewest rounds an evaluation reads; also the rounds after a change its outcome is measured over. */
    static final int MIN_WINDOW = 8;
    /** How much more goodput a candidate must promise than the installed config, in percent. */
    static final int MARGIN_PERCENT = 10;
    /** The arrival quantiles timeouts are set at. */
    private static final double[] TIMEOUT_QUANTILES = {0.5, 0.75, 0.9};
    private static final long TENTH_MS = 100_000;

    /** What an evaluation decided: the config to install, the estimates behind it, in words. */
    record Choice(GoodputModel.Estimate chosen, GoodputModel.Estimate runnerUp, GoodputModel.Estimate installed, String reason) {
    }

    private final int workers;
    private final int floorWorkers;
    private final long seed;
    private int streak;
    /** How much the workers grow their batches while rounds count fewer contributions, at most (1: they do not). */
    private double maxGrowth = 1;
    /** The per-round overhead last calibrated (ns): the measured round time beyond the replayed compute. */
    private double overheadNs;

    /** A chooser for a job of {@code workers} workers that keeps at least {@code floorPercent}% of their samples. */
    AutoChooser(final int workers, final int floorPercent, final long seed) {
        this.workers = workers;
        this.floorWorkers = Math.max(1, (int) Math.ceil(workers * floorPercent / 100.0 - 1e-9));
        this.seed = seed;
    }

    /** The workers grow their batches, at most {@code factor} times, while rounds count fewer contributions (--rebalance). */
    void rebalancedBatches(final double factor) {
        this.maxGrowth = Math.max(1, factor);
    }

    /** A config's estimate on these rounds, with the batches it would lead to when the workers rebalance them. */
    private GoodputModel.Estimate estimate(final SyncConfig config, final long[][] times, final double measuredGrowth) {
        return maxGrowth > 1 ? GoodputModel.replayRebalanced(config, times, overheadNs, workers, seed, measuredGrowth, maxGrowth)
            : GoodputModel.replay(config, times, overheadNs, workers, seed);
    }

    /**
     * Evaluates once: {@code window} the last rounds of compute times ({@link ComputeHistory#window}),
     * {@code measuredRoundNs} the mean time of the last rounds since {@code installed} took over (0:
     * too few yet, the last calibration stands). Returns a choice to install, or null.
     */
    Choice evaluate(final long[][] window, final SyncConfig installed, final double measuredRoundNs) {
        final long[][] fit = Arrays.copyOfRange(window, 0, window.length / 2);
        final long[][] times = Arrays.copyOfRange(window, window.length / 2, window.length);
        if (measuredRoundNs > 0) {
            overheadNs = Math.max(0, measuredRoundNs - GoodputModel.replay(installed, times, 0, workers, seed).roundNs());
        }
        // the batches the installed config's rounds run at, which the measured times carry
        final double measuredGrowth = GoodputModel.growth(GoodputModel.replay(installed, times, overheadNs, workers, seed), maxGrowth);
        final GoodputModel.Estimate now = estimate(installed, times, measuredGrowth);
        final List<GoodputModel.Estimate> ranked = new ArrayList<>();
        for (final SyncConfig c : candidates(fit)) {
            final GoodputModel.Estimate e = estimate(c, times, measuredGrowth);
            if (c.equals(SyncConfig.bsp()) || keepsFloor(e)) {
                ranked.add(e);
            }
        }
        ranked.sort(Comparator.comparingDouble(GoodputModel.Estimate::goodput).reversed());
        final boolean belowFloor = !installed.equals(SyncConfig.bsp()) && !keepsFloor(now);
        // toward fewer samples or more staleness only for a margin of goodput; back toward more samples
        // as soon as that costs none (the band between is the hysteresis). Configs within the margin of
        // the best are as good as it: of those, the one keeping the most samples
        final double band = ranked.get(0).goodput() / (1 + MARGIN_PERCENT / 100.0);
        final GoodputModel.Estimate best = ranked.stream().filter(e -> e.goodput() >= band)
            .max(Comparator.comparingDouble(GoodputModel.Estimate::share)).orElseThrow();
        GoodputModel.Estimate target = ranked.get(0).goodput() > now.goodput() * (1 + MARGIN_PERCENT / 100.0) || belowFloor ? best : null;
        if (target == null) {
            target = ranked.stream().filter(e -> e.share() > now.share() + 1e-9 && e.goodput() >= now.goodput()).findFirst().orElse(null);
        }
        if (target == null || target.config().equals(installed)) {
            streak = 0;
            return null;
        }
        final double ratio = target.goodput() / now.goodput();
        if (!belowFloor && ++streak < hold(ratio)) {
            return null;
        }
        final int held = streak;
        streak = 0;
        final GoodputModel.Estimate chosen = target;
        final GoodputModel.Estimate runnerUp = ranked.stream().filter(e -> !e.config().equals(chosen.config())).findFirst().orElse(null);
        final String why = belowFloor
            ? String.format(Locale.ROOT, "auto: %s keeps %.0f%% of the samples, under the floor; %s", installed, 100 * now.share(), chosen)
            : String.format(Locale.ROOT, "auto: %s, %.2fx the goodput of %s (%.2f ms/round, %.0f%%) for %d evaluations; runner-up %s",
                chosen, ratio, installed, now.roundNs() / 1e6, 100 * now.share(), held, runnerUp);
        return new Choice(chosen, runnerUp, now, why);
    }

    /** Whether an estimate keeps at least the floor's share of the samples. */
    private boolean keepsFloor(final GoodputModel.Estimate e) {
        return e.share() * workers >= floorWorkers - 1e-9;
    }

    /**
     * Whether {@code set} is what holds the others up: in more than half of the rounds each of its
     * workers finished after every other worker (a persistent straggler, or a slow class; a worker
     * merely unlucky under per-round jitter is the slowest in a fair share of the rounds only).
     */
    private boolean slowestInMostRounds(final long[][] times, final BitSet set) {
        int rounds = 0;
        for (final long[] round : times) {
            long slowestOther = Long.MIN_VALUE;
            long fastestIn = Long.MAX_VALUE;
            for (int w = 0; w < workers; w++) {
                if (set.get(w)) {
                    fastestIn = Math.min(fastestIn, round[w]);
                } else {
                    slowestOther = Math.max(slowestOther, round[w]);
                }
            }
            rounds += fastestIn > slowestOther ? 1 : 0;
        }
        return 2 * rounds > times.length;
    }

    /**
     * Whether waiting for the fastest {@code k} cuts off workers that are clearly later: in more than
     * half of the rounds the next worker to finish finished more than the per-round overhead after the
     * k-th. Closer than that, the order the switch hears them in is the order they happened to send
     * in (the overhead's spread among the workers, which the model does not see), and dropping the
     * last ones drops gradients at random for little time.
     */
    private boolean cutsClearlyAfter(final long[][] times, final int k) {
        final long[] sorted = new long[workers];
        int rounds = 0;
        for (final long[] round : times) {
            System.arraycopy(round, 0, sorted, 0, workers);
            Arrays.sort(sorted);
            rounds += sorted[k] - sorted[k - 1] > overheadNs ? 1 : 0;
        }
        return 2 * rounds > times.length;
    }

    /**
     * Evaluations in a row a candidate promising {@code ratio} times the installed config's goodput
     * must win before it is installed: half the window's rounds (the last win then on rounds the
     * first had not seen) at the margin, fewer the larger the promise (a persistent 8x straggler is
     * plain after a few rounds; per-round jitter is not), at least 2; below the margin (a config
     * keeping more samples) half the window.
     */
    static int hold(final double ratio) {
        final double margin = MARGIN_PERCENT / 100.0;
        if (ratio <= 1 + margin) {
            return WINDOW / 2;
        }
        return (int) Math.max(2, Math.min(WINDOW / 2, Math.ceil(WINDOW / 2 * margin / (ratio - 1))));
    }

    /** The candidate configs fitted to these rounds (see the class comment). */
    List<SyncConfig> candidates(final long[][] times) {
        final List<SyncConfig> out = new ArrayList<>();
        out.add(SyncConfig.bsp());
        final Integer[] slowestFirst = new Integer[workers];
        final long[] medians = new long[workers];
        for (int w = 0; w < workers; w++) {
            slowestFirst[w] = w;
            final long[] column = new long[times.length];
            for (int r = 0; r < times.length; r++) {
                column[r] = times[r][w];
            }
            Arrays.sort(column);
            medians[w] = column[column.length / 2];
        }
        Arrays.sort(slowestFirst, (a, b) -> Long.compare(medians[b], medians[a]));
        final BitSet excluded = new BitSet();
        for (int k = 1; workers - k >= floorWorkers; k++) {
            excluded.set(slowestFirst[k - 1]);
            if (slowestInMostRounds(times, excluded)) {
                out.add(SyncConfig.bsp().excluding(excluded).withLateMode(LateMode.DROP));
            }
        }
        for (int k = floorWorkers; k < workers; k++) {
            if (cutsClearlyAfter(times, k)) {
                out.add(SyncConfig.fastest(k).withLateMode(LateMode.DROP));
            }
        }
        final double[] gaps = new double[times.length * (workers - 1)];
        int n = 0;
        for (final long[] round : times) {
            final long first = Arrays.stream(round).min().orElse(0);
            boolean skipped = false;
            for (final long t : round) {
                if (t == first && !skipped) {
                    skipped = true;
                } else {
                    gaps[n++] = t - first;
                }
            }
        }
        Arrays.sort(gaps);
        for (final double q : TIMEOUT_QUANTILES) {
            // past the overhead too: within it, who arrives first is the order of sending, not who is slow
            final double gap = gaps[(int) Math.min(n - 1, Math.floor(q * n))] + overheadNs;
            final long tenths = Math.max(1, (long) Math.ceil(gap / TENTH_MS));
            final SyncConfig timed = SyncConfig.bsp().withTimeoutNs(tenths * TENTH_MS).withLateMode(LateMode.DROP);
            if (!out.contains(timed)) {
                out.add(timed);
            }
        }
        out.add(SyncConfig.ssp(1));
        out.add(SyncConfig.ssp(2));
        return out;
    }
}
