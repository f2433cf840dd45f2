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
 * measured compute times and jitter ({@link #WINDOW}) are replayed ({@link GoodputModel}) through each
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
 * k finished after all the others in most rounds; fastest-k with drop, k >= F, where the cut is in a
 * gap of the arrivals in most rounds ({@link #cutsInAGap}); BSP with a timeout in each of the widest
 * gaps of the contributions' arrival offsets (how long after a step's first packet each arrived:
 * their compute times' lag and their jitter, {@link GoodputModel.Rounds}; {@link #timeouts}; from a
 * full window only), with drop, alone and with each exclusion; SSP with bounds 1 and 2. Not PSP: its
 * unsampled workers' gradients cost far more than their staleness weights say (2-4 points of
 * accuracy in every scenario measured, docs/results.md), and chosen by the model it lost up to a
 * point and a quarter of the time to 0.80. The jitter is what keeps a cut honest: on a shared host
 * the workers take turns on the processors, and a timeout inside that spread drops gradients by the
 * order they were sent in; the model sees the spread, so it predicts the samples such a cut would lose.
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
    /** The fewest rounds an evaluation reads: two to fit candidates to, two to judge them on (hold() asks more of a small promise). */
    static final int MIN_WINDOW = 4;
    /** The rounds after a change its outcome is measured over. */
    static final int OUTCOME_ROUNDS = 8;
    /** How much more goodput a candidate must promise than the installed config, in percent. */
    static final int MARGIN_PERCENT = 10;
    /** How many gaps in the arrival offsets timeouts are tried in ({@link #timeouts}). */
    private static final int TIMEOUT_GAPS = 3;
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
    /**
     * Whether the config last chosen beat BSP on the compute times alone, the jitter left out. Once it
     * does not, its gain is in the jitter only, and the jitter measured under a cut is the cut's own:
     * on a shared host most of it is the workers taking turns on the processors, and the workers a cut
     * leaves behind start their next rounds behind the others, so they look late under any config
     * replayed (a worker late on its link is another matter: that shows under BSP, where every worker
     * starts together, and a config chosen for it is left to the other rules).
     */
    private boolean chosenOnComputeTimes;

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

    /**
     * A config's estimate on the window's rounds from {@code from} (the older ones replayed first, for
     * the state they leave), with the batches it would lead to when the workers rebalance them.
     */
    private GoodputModel.Estimate estimate(final SyncConfig config, final GoodputModel.Rounds window, final int from,
                                           final double measuredGrowth) {
        return maxGrowth > 1 ? GoodputModel.replayRebalanced(config, window, from, overheadNs, workers, seed, measuredGrowth, maxGrowth)
            : GoodputModel.replay(config, window, from, overheadNs, workers, seed);
    }

    /**
     * Evaluates once: {@code window} the last rounds of compute times and jitter (from
     * {@link ComputeHistory#window}), {@code measuredRoundNs} the mean time of the last rounds since
     * {@code installed} took over (0: too few yet, the last calibration stands). Returns a choice to
     * install, or null.
     */
    Choice evaluate(final GoodputModel.Rounds window, final SyncConfig installed, final double measuredRoundNs) {
        final int half = window.count() / 2;
        final GoodputModel.Rounds fit = window.range(0, half);
        if (measuredRoundNs > 0) {
            overheadNs = Math.max(0, measuredRoundNs - GoodputModel.replay(installed, window, half, 0, workers, seed).roundNs());
        }
        // the batches the installed config's rounds run at, which the measured times carry
        final double measuredGrowth = GoodputModel.growth(GoodputModel.replay(installed, window, half, overheadNs, workers, seed),
            maxGrowth);
        final GoodputModel.Estimate now = estimate(installed, window, half, measuredGrowth);
        // the same rounds without the jitter: what the compute times alone say of each config against BSP
        final GoodputModel.Rounds computeOnly = GoodputModel.Rounds.of(window.computeNs());
        final double bspWithoutJitter = estimate(SyncConfig.bsp(), computeOnly, half, measuredGrowth).goodput();
        final boolean belowFloor = !installed.equals(SyncConfig.bsp()) && !keepsFloor(now);
        // chosen for what the compute times showed, which they show no more: the jitter measured since
        // is the cut's own (below), so the configs are ranked on the compute times alone
        final GoodputModel.Estimate withoutJitter = chosenOnComputeTimes && !installed.equals(SyncConfig.bsp()) && !belowFloor
            ? estimate(installed, computeOnly, half, measuredGrowth) : null;
        final boolean jitterOnly = withoutJitter != null && withoutJitter.goodput() <= bspWithoutJitter;
        final GoodputModel.Estimate current = jitterOnly ? withoutJitter : now;
        final List<GoodputModel.Estimate> ranked = new ArrayList<>();
        for (final SyncConfig c : candidates(fit)) {
            final GoodputModel.Estimate e = estimate(c, jitterOnly ? computeOnly : window, half, measuredGrowth);
            if (c.equals(SyncConfig.bsp()) || keepsFloor(e)) {
                ranked.add(e);
            }
        }
        ranked.sort(Comparator.comparingDouble(GoodputModel.Estimate::goodput).reversed());
        // toward fewer samples or more staleness only for a margin of goodput; back toward more samples
        // as soon as that costs none (the band between is the hysteresis). Configs within the margin of
        // the best are as good as it: of those, the one keeping the most samples
        final double band = ranked.get(0).goodput() / (1 + MARGIN_PERCENT / 100.0);
        final GoodputModel.Estimate best = ranked.stream().filter(e -> e.goodput() >= band)
            .max(Comparator.comparingDouble(GoodputModel.Estimate::share)).orElseThrow();
        GoodputModel.Estimate target = ranked.get(0).goodput() > current.goodput() * (1 + MARGIN_PERCENT / 100.0) || belowFloor
            || jitterOnly ? best : null;
        if (target == null) {
            target = ranked.stream().filter(e -> e.share() > current.share() + 1e-9 && e.goodput() >= current.goodput()).findFirst()
                .orElse(null);
        }
        if (target == null || target.config().equals(installed)) {
            streak = 0;
            return null;
        }
        final double ratio = target.goodput() / current.goodput();
        if (!belowFloor && ++streak < hold(ratio)) {
            return null;
        }
        final int held = streak;
        streak = 0;
        final GoodputModel.Estimate chosen = target;
        chosenOnComputeTimes = !chosen.config().equals(SyncConfig.bsp())
            && estimate(chosen.config(), computeOnly, half, measuredGrowth).goodput() > bspWithoutJitter;
        final GoodputModel.Estimate runnerUp = ranked.stream().filter(e -> !e.config().equals(chosen.config())).findFirst().orElse(null);
        final String why = belowFloor
            ? String.format(Locale.ROOT, "auto: %s keeps %.0f%% of the samples, under the floor; %s", installed, 100 * now.share(), chosen)
            : jitterOnly
            ? String.format(Locale.ROOT, "auto: %s gains on BSP only in the arrivals' jitter, not in the compute times, for %d evaluations; %s",
                installed, held, chosen)
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
     * Whether waiting for the fastest {@code k} cuts in a gap: in more than half of the rounds the
     * next contribution arrived more than {@code spread} (the median arrival offset,
     * {@link GoodputModel.Rounds#offsets}: the typical spread of the arrivals) after the k-th; {@code
     * offsets} holds the rounds' offsets one round of W after another. A cut inside that spread drops gradients by
     * the order they were sent in, for little time.
     */
    private boolean cutsInAGap(final double[] offsets, final double spread, final int k) {
        final int rounds = offsets.length / workers;
        final double[] sorted = new double[workers];
        int n = 0;
        for (int r = 0; r < rounds; r++) {
            System.arraycopy(offsets, r * workers, sorted, 0, workers);
            Arrays.sort(sorted);
            n += sorted[k] - sorted[k - 1] > spread ? 1 : 0;
        }
        return 2 * n > rounds;
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

    /**
     * The timeouts worth trying on these arrival offsets (ns, rounded up to a tenth of a
     * millisecond): in each of the {@value #TIMEOUT_GAPS} widest gaps between consecutive offsets
     * above their median, as far above the gap's lower edge as that edge is above the median (the
     * spread of the arrivals that are in time), at most midway across the gap. A cut inside a dense
     * run of offsets drops gradients by the order of arrival and moves with every round's noise; one
     * in a gap cuts the same contributions round after round.
     */
    static List<Long> timeouts(final double[] offsets) {
        final double[] sorted = offsets.clone();
        Arrays.sort(sorted);
        final int median = sorted.length / 2;
        final Integer[] gaps = new Integer[Math.max(0, sorted.length - 1 - median)];
        for (int i = 0; i < gaps.length; i++) {
            gaps[i] = median + i;
        }
        // the widest first; of equal widths the lowest
        Arrays.sort(gaps, (a, b) -> Double.compare(sorted[b + 1] - sorted[b], sorted[a + 1] - sorted[a]));
        final List<Long> out = new ArrayList<>();
        for (int g = 0; g < Math.min(TIMEOUT_GAPS, gaps.length); g++) {
            final double low = sorted[gaps[g]];
            final double high = sorted[gaps[g] + 1];
            if (high <= low) {
                break;
            }
            final double at = Math.min(low + (low - sorted[median]), (low + high) / 2);
            final long timeout = Math.max(1, (long) Math.ceil(at / TENTH_MS)) * TENTH_MS;
            if (!out.contains(timeout)) {
                out.add(timeout);
            }
        }
        return out;
    }

    /** The candidate configs fitted to these rounds (see the class comment). */
    List<SyncConfig> candidates(final GoodputModel.Rounds rounds) {
        final long[][] times = rounds.computeNs();
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
        final List<SyncConfig> exclusions = new ArrayList<>();
        for (int k = 1; workers - k >= floorWorkers; k++) {
            excluded.set(slowestFirst[k - 1]);
            if (slowestInMostRounds(times, excluded)) {
                exclusions.add(SyncConfig.bsp().excluding(excluded).withLateMode(LateMode.DROP));
            }
        }
        out.addAll(exclusions);
        final double[] offsets = rounds.offsets();
        final double[] ascending = offsets.clone();
        Arrays.sort(ascending);
        final double spread = ascending[ascending.length / 2];
        for (int k = floorWorkers; k < workers; k++) {
            if (cutsInAGap(offsets, spread, k)) {
                out.add(SyncConfig.fastest(k).withLateMode(LateMode.DROP));
            }
        }
        // on its own, and with each exclusion: the others' slow rounds cut too
        final List<SyncConfig> bases = new ArrayList<>(List.of(SyncConfig.bsp()));
        bases.addAll(exclusions);
        // a timeout's share depends on how often a worker is slow, which a short window does not tell
        for (final long timeout : rounds.count() < WINDOW / 2 ? List.<Long>of() : timeouts(offsets)) {
            for (final SyncConfig base : bases) {
                final SyncConfig timed = base.withTimeoutNs(timeout).withLateMode(LateMode.DROP);
                if (!out.contains(timed)) {
                    out.add(timed);
                }
            }
        }
        out.add(SyncConfig.ssp(1));
        out.add(SyncConfig.ssp(2));
        return out;
    }
}
