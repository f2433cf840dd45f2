package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;

import java.util.Arrays;
import java.util.BitSet;

/**
 * What a sync config would make of compute times already measured: the {@code auto} policy's
 * estimator ({@link AutoChooser}). A worker's compute time does not depend on the barrier, so the
 * last rounds' times, per worker, can be replayed through any config: each worker computes round r
 * once the bound lets it start ({@link SyncRules#gateRound}) and its previous contribution is out,
 * and its contribution arrives a per-round overhead (communication and the loop's own work,
 * calibrated from the measured round times) later, plus its jitter in that round: how much later
 * than its compute time explains the switch saw it ({@link Rounds}; on a shared host the workers take
 * turns on the processors, so the order of their packets is not the order of their computes). A
 * round is released as the switch releases a chunk ({@code ReleaseRule}): once every worker it waits
 * for (the required set, or PSP's seeded sample of it) and at least its quorum have arrived, or its
 * timeout after the first packet (the first compute to end, without jitter), and never before the
 * round before it. A contribution that arrives after its round's release is late: dropped, or
 * folded into a later round (counted, one round staler); a worker that gets to a round already
 * released skips it, as the training loop does, and computes the first one still open, and one that
 * finds its round released as its compute ends drops the gradient unsent (under drop) and goes on at
 * once, without the round's overhead.
 *
 * <p>Progress per second (goodput, as in Pollux, OSDI 2021: statistical efficiency times
 * throughput) is the gradient samples a round puts to use, each weighed as the staleness-aware step
 * weighs it ({@code 1 / (1 + staleness)}, StaleScale.INVERSE), over all the workers' samples, divided
 * by the round time. The model assumes a sample's worth is linear in that weight: it does not know
 * the gradient noise scale, so it treats a round with three quarters of the samples as three
 * quarters of a round. WBSP's extra gradients are not modelled (their worth depends on that scale).
 */
public final class GoodputModel {
    private GoodputModel() {
    }

    /**
     * The rounds a config is replayed on: {@code computeNs[r][w]}, worker w's compute time in round
     * r of the window (oldest first), and {@code jitterNs[r][w]}, how much later than that compute
     * time explains (its lag behind the round's first compute) the switch saw w's contribution.
     */
    public record Rounds(long[][] computeNs, long[][] jitterNs) {
        public Rounds {
            if (computeNs.length != jitterNs.length) {
                throw new IllegalArgumentException(computeNs.length + " rounds of compute times, " + jitterNs.length + " of jitter");
            }
        }

        /** Compute times alone: every contribution arrives as its compute time says (no jitter). */
        public static Rounds of(final long[][] computeNs) {
            final long[][] none = new long[computeNs.length][];
            for (int r = 0; r < computeNs.length; r++) {
                none[r] = new long[computeNs[r].length];
            }
            return new Rounds(computeNs, none);
        }

        /**
         * Compute times with the arrival offsets the switch measured in the same rounds
         * ({@code offsetNs[r][w]}, FinishedRounds): a worker's jitter is its offset beyond its
         * compute time's lag behind the round's fastest compute (never below 0).
         */
        public static Rounds measured(final long[][] computeNs, final long[][] offsetNs) {
            final long[][] jitter = new long[computeNs.length][];
            for (int r = 0; r < computeNs.length; r++) {
                final long fastest = Arrays.stream(computeNs[r]).min().orElse(0);
                jitter[r] = new long[computeNs[r].length];
                for (int w = 0; w < computeNs[r].length; w++) {
                    jitter[r][w] = Math.max(0, offsetNs[r][w] - (computeNs[r][w] - fastest));
                }
            }
            return new Rounds(computeNs, jitter);
        }

        /** The rounds from {@code from} (inclusive) to {@code to} (exclusive). */
        public Rounds range(final int from, final int to) {
            return new Rounds(Arrays.copyOfRange(computeNs, from, to), Arrays.copyOfRange(jitterNs, from, to));
        }

        public int count() {
            return computeNs.length;
        }

        /** Each contribution's lag behind its round's first packet, as the switch would measure it under BSP: the timeouts' scale. */
        public double[] offsets() {
            int n = 0;
            for (final long[] round : computeNs) {
                n += round.length;
            }
            final double[] out = new double[n];
            int i = 0;
            for (int r = 0; r < computeNs.length; r++) {
                final long fastest = Arrays.stream(computeNs[r]).min().orElse(0);
                for (int w = 0; w < computeNs[r].length; w++) {
                    out[i++] = computeNs[r][w] - fastest + jitterNs[r][w];
                }
            }
            return out;
        }

        private Rounds scaled(final double factor) {
            final long[][] out = new long[computeNs.length][];
            for (int r = 0; r < computeNs.length; r++) {
                out[r] = new long[computeNs[r].length];
                for (int w = 0; w < computeNs[r].length; w++) {
                    out[r][w] = Math.round(computeNs[r][w] * factor);
                }
            }
            return new Rounds(out, jitterNs);
        }
    }

    /**
     * A config's predicted behaviour over the replayed rounds: the time per round (ns), the share of
     * the workers' contributions a round counts, their mean staleness, and the goodput (weighted share
     * per second).
     */
    public record Estimate(SyncConfig config, double roundNs, double share, double staleness, double goodput) {
        /** For decisions and reports: {@code ssp:2: 12.3 ms/round, 100% of samples, staleness 0.41}. */
        @Override
        public String toString() {
            return String.format(java.util.Locale.ROOT, "%s: %.2f ms/round, %.0f%% of samples, staleness %.2f", config, roundNs / 1e6,
                100 * share, staleness);
        }
    }

    /**
     * Replays {@code window} (its compute times and jitter) through {@code config} for a job of
     * {@code workers} workers, each round costing {@code overheadNs} besides compute; {@code seed}
     * draws PSP's samples.
     */
    public static Estimate replay(final SyncConfig config, final Rounds window, final double overheadNs, final int workers,
                                  final long seed) {
        return replay(config, window, 0, overheadNs, workers, seed);
    }

    /**
     * As above, judged on the rounds from {@code from} on: the rounds before it are replayed for the
     * state they leave the workers in (who is behind, by how much), not counted.
     */
    public static Estimate replay(final SyncConfig config, final Rounds window, final int from, final double overheadNs,
                                  final int workers, final long seed) {
        final SyncConfig.Resolved rule = config.resolve(workers);
        final long[][] times = window.computeNs();
        final long[][] jitter = window.jitterNs();
        final int rounds = times.length;
        if (from < 0 || from >= rounds) {
            throw new IllegalArgumentException("no rounds to replay from round " + from + " of " + rounds);
        }
        final double[] release = new double[rounds];
        // when each worker starts the next round it computes (it skips rounds released before then)
        final double[] start = new double[workers];
        final double[] arrival = new double[workers];
        final double[] sorted = new double[workers];
        // the newest round each worker was left out of (late, or skipped), and whether it sits this one out
        final int[] leftOut = new int[workers];
        Arrays.fill(leftOut, -1);
        final boolean[] sitsOut = new boolean[workers];
        // the switch's late set (ReleaseRule): workers a timeout released a round without, not waited for until they catch up
        final boolean[] lateSet = new boolean[workers];
        double counted = 0;
        double weight = 0;
        double stale = 0;
        for (int r = 0; r < rounds; r++) {
            double first = Double.MAX_VALUE;
            for (int w = 0; w < workers; w++) {
                // back more than the timeout after the round before went without it: it waits for this one's release
                // (SyncRules.sitsOut; the job's last round is not known here)
                sitsOut[w] = r > 0 && SyncRules.sitsOut(r, r - 1, leftOut[w], (long) release[r - 1], (long) start[w], rule.timeoutNs,
                    Integer.MAX_VALUE);
                arrival[w] = sitsOut[w] ? Double.MAX_VALUE : start[w] + times[r][w] + overheadNs + jitter[r][w];
                if (!sitsOut[w]) {
                    first = Math.min(first, start[w] + times[r][w] + overheadNs);
                }
                sorted[w] = arrival[w];
            }
            Arrays.sort(sorted);
            final BitSet waited = rule.requiredFor(seed, r);
            double required = 0;
            double onTime = 0;
            boolean anyLate = false;
            for (int w = waited.nextSetBit(0); w >= 0 && w < workers; w = waited.nextSetBit(w + 1)) {
                required = Math.max(required, arrival[w]);
                anyLate |= lateSet[w];
                onTime = lateSet[w] ? onTime : Math.max(onTime, arrival[w]);
            }
            final double quorum = sorted[Math.min(workers, Math.max(1, rule.quorum)) - 1];
            final double met = Math.max(required, quorum);
            double at = met;
            if (rule.timeoutNs != SyncConfig.NO_TIMEOUT) {
                at = Math.min(at, first + rule.timeoutNs);
                if (anyLate) {
                    // every worker outside the late set is in: released without waiting out the timeout
                    at = Math.min(at, onTime);
                }
            }
            release[r] = r == 0 ? at : Math.max(at, release[r - 1]);
            for (int w = 0; w < workers && rule.timeoutNs != SyncConfig.NO_TIMEOUT; w++) {
                if (arrival[w] <= release[r] || arrival[w] - first <= rule.timeoutNs) {
                    // counted, or late only because the late set let the round go: waited for again
                    lateSet[w] = false;
                } else if (at < met && at == first + rule.timeoutNs) {
                    lateSet[w] = true;
                }
            }
            // w may start round r + 1 once its contribution is out and the bound clears it
            final long gate = SyncRules.gateRound(r + 1, rule.bound);
            for (int w = 0; w < workers; w++) {
                if (sitsOut[w]) {
                    leftOut[w] = r;
                    start[w] = Math.max(start[w], release[r]);
                    continue;
                }
                if (start[w] >= release[r]) {
                    // released before w got to it: w skips it (TrainingLoop), contributing nothing
                    leftOut[w] = r;
                    continue;
                }
                // R when w started round r (releases are in order): its gradient's staleness by the rule
                int released = r - 1;
                while (released >= 0 && release[released] > start[w]) {
                    released--;
                }
                final int s = SyncRules.staleness(r, released);
                final boolean late = arrival[w] > release[r];
                if (late) {
                    leftOut[w] = r;
                }
                if (r >= from && (!late || rule.lateMode != LateMode.DROP)) {
                    final int staleness = late ? s + 1 : s;
                    counted++;
                    weight += 1.0 / (1 + staleness);
                    stale += staleness;
                }
                // a worker that finds its round released when its compute ends drops the gradient unsent
                // and goes on from there (TrainingLoop, drop); else it goes on once its contribution is out
                final double computed = start[w] + times[r][w];
                final double out = late && rule.lateMode == LateMode.DROP && computed >= release[r] ? computed : arrival[w];
                start[w] = gate >= 0 && gate <= r ? Math.max(out, release[(int) gate]) : out;
            }
        }
        final double roundNs = (release[rounds - 1] - (from == 0 ? 0 : release[from - 1])) / (rounds - from);
        final double all = (double) (rounds - from) * workers;
        return new Estimate(config, roundNs, counted / all, counted == 0 ? 0 : stale / counted, weight / all / (roundNs / 1e9));
    }

    /**
     * As {@link #replay}, for workers that grow their batches to keep a round's samples while rounds
     * count fewer contributions (serene train's --rebalance: B x W / the mean contributor count, at
     * most {@code maxGrowth} x B). {@code window} was measured at batches {@code measuredGrowth}
     * times B; a config is replayed with its compute times scaled to the growth it would lead to (a
     * compute time taken as proportional to its batch), each contribution counting that many samples
     * in the goodput (the share stays the share of contributions a round counts).
     */
    public static Estimate replayRebalanced(final SyncConfig config, final Rounds window, final int from, final double overheadNs,
                                            final int workers, final long seed, final double measuredGrowth, final double maxGrowth) {
        final Rounds plain = window.scaled(1 / measuredGrowth);
        final Estimate first = replay(config, plain, from, overheadNs, workers, seed);
        final double growth = growth(first, maxGrowth);
        final Estimate e = growth == 1 ? first : replay(config, plain.scaled(growth), from, overheadNs, workers, seed);
        // the share stays the contributions' (what the floor keeps); the goodput counts the grown batches
        return new Estimate(config, e.roundNs(), e.share(), e.staleness(), e.goodput() * growth);
    }

    /** The batch growth a config's rounds lead to under rebalancing: 1 / the share of contributions, at most {@code maxGrowth}. */
    public static double growth(final Estimate e, final double maxGrowth) {
        return e.share() <= 0 ? maxGrowth : Math.min(maxGrowth, Math.max(1, 1 / e.share()));
    }
}
