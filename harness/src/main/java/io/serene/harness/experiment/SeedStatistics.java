package io.serene.harness.experiment;

import org.apache.commons.math3.distribution.TDistribution;
import org.apache.commons.math3.stat.inference.TTest;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Statistics over seeds: runs here vary by 10-35%, so a mean needs an interval and a speed-up a
 * test. Student's t-interval for a mean (two-sided, 95%), and Welch's t-test (unequal variances)
 * for two policies' means.
 */
final class SeedStatistics {
    static final double CONFIDENCE = 0.95;

    private SeedStatistics() {
    }

    /** The mean's two-sided t-interval {low, high}; null for fewer than two values. */
    static double[] tInterval(final List<Double> values) {
        final int n = values.size();
        if (n < 2) {
            return null;
        }
        final double mean = mean(values);
        double var = 0;
        for (final double v : values) {
            var += (v - mean) * (v - mean);
        }
        final double se = Math.sqrt(var / (n - 1) / n);
        final double t = new TDistribution(n - 1).inverseCumulativeProbability(1 - (1 - CONFIDENCE) / 2);
        return new double[] {mean - t * se, mean + t * se};
    }

    /**
     * The speed-up of {@code policy} over {@code baseline} paired by seed, for runs made seed by seed
     * next to each other (an experiment's order), so each pair saw the same machine: the geometric
     * mean of the per-seed ratios baseline / policy and its 95% t-interval on their logarithms,
     * {ratio, low, high}; null for fewer than two seeds with a value on both sides.
     */
    static double[] pairedSpeedup(final Map<Long, Double> baseline, final Map<Long, Double> policy) {
        final List<Double> logs = new ArrayList<>();
        baseline.forEach((seed, b) -> {
            final Double v = policy.get(seed);
            if (b != null && v != null && b > 0 && v > 0) {
                logs.add(Math.log(b / v));
            }
        });
        final double[] ci = tInterval(logs);
        return ci == null ? null : new double[] {Math.exp(mean(logs)), Math.exp(ci[0]), Math.exp(ci[1])};
    }

    /**
     * Welch's two-sided p-value for the two means differing; null when either side has fewer than
     * two values, and 1 when both are constant and equal (0 when constant and different).
     */
    static Double welchP(final List<Double> a, final List<Double> b) {
        if (a.size() < 2 || b.size() < 2) {
            return null;
        }
        final double[] x = a.stream().mapToDouble(Double::doubleValue).toArray();
        final double[] y = b.stream().mapToDouble(Double::doubleValue).toArray();
        if (variance(a) == 0 && variance(b) == 0) {
            return mean(a) == mean(b) ? 1.0 : 0.0;
        }
        return new TTest().tTest(x, y);
    }

    static double mean(final List<Double> values) {
        return values.stream().mapToDouble(Double::doubleValue).average().orElse(Double.NaN);
    }

    private static double variance(final List<Double> values) {
        final double m = mean(values);
        return values.stream().mapToDouble(v -> (v - m) * (v - m)).sum();
    }
}
