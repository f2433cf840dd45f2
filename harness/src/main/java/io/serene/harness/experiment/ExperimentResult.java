package io.serene.harness.experiment;

import java.util.List;
import java.util.Map;

/**
 * An experiment's {@code summary.json}, written and read as this type ({@link ExperimentSummary}
 * computes it): per scenario and policy the statistics over seeds, each policy across scenarios,
 * and every run.
 *
 * @param models         train mode: the models; sim mode: null
 * @param targetAccuracy train mode: the accuracy times to accuracy are measured to; sim mode: null
 * @param baseline       the BSP policy's name, or null if the file has none
 * @param policies       per policy, the mean over scenarios of its per-scenario figures
 */
public record ExperimentResult(int schemaVersion, String experiment, String mode, List<String> models, List<Long> seeds,
                               Double targetAccuracy, String baseline, Map<String, Across> policies, List<Scenario> scenarios,
                               List<ExperimentRow> runs, boolean quick) {
    /** One scenario: its shape and per policy the statistics. */
    public record Scenario(String id, String model, int workers, String stragglers, Map<String, PolicyStats> policies) {
    }

    /**
     * A policy in a scenario: per metric its statistics, and against the baseline (null without one)
     * the speed-ups of the mean JCT and time to accuracy and the accuracy difference in points, each
     * with Welch's two-sided p-value; and the speed-ups paired by seed, {ratio, low, high}: the
     * geometric mean of the per-seed ratios and its 95% interval (null for fewer than two pairs).
     */
    public record PolicyStats(Metric jctSeconds, Metric ttaSeconds, Metric cumulativeWaitingSeconds, Metric computeShare,
                              Metric finalAccuracy, double modeSwitches, int seeds, Double speedupVsBsp, Double speedupWelchP,
                              Double ttaSpeedupVsBsp, Double ttaSpeedupWelchP, Double accuracyDeltaPp, Double accuracyWelchP,
                              List<Double> pairedSpeedup, List<Double> pairedTtaSpeedup) {
    }

    /**
     * A metric over seeds: mean, sample standard deviation (0 for one seed) and the mean's 95%
     * t-interval {low, high} (null for one seed); all null where a value is missing (a time to
     * accuracy exists only if every seed reached the target). {@code n}: the seeds with a value.
     */
    public record Metric(Double mean, Double std, List<Double> ci95, int n) {
    }

    /** A policy across scenarios: the mean of its per-scenario figures (null if one is missing). */
    public record Across(Double speedupVsBsp, Double ttaSpeedupVsBsp, Double accuracyDeltaPp, Double jctSeconds, Double ttaSeconds,
                         Double cumulativeWaitingSeconds, Double computeShare, Double finalAccuracy, int scenarios) {
    }
}
