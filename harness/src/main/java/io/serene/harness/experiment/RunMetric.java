package io.serene.harness.experiment;

import java.util.function.Function;

/** The figures an experiment compares over seeds: each one's name in the files, its value in a run's row and its statistics. */
enum RunMetric {
    JCT("jctSeconds", ExperimentRow::jctSeconds, ExperimentResult.PolicyStats::jctSeconds),
    TTA("ttaSeconds", ExperimentRow::ttaSeconds, ExperimentResult.PolicyStats::ttaSeconds),
    WAITING("cumulativeWaitingSeconds", ExperimentRow::cumulativeWaitingSeconds, ExperimentResult.PolicyStats::cumulativeWaitingSeconds),
    COMPUTE_SHARE("computeShare", ExperimentRow::computeShare, ExperimentResult.PolicyStats::computeShare),
    ACCURACY("finalAccuracy", ExperimentRow::finalAccuracy, ExperimentResult.PolicyStats::finalAccuracy);

    /** The member's name in summary.json, summary.csv and scenarios.csv. */
    final String key;
    private final Function<ExperimentRow, Double> ofRow;
    private final Function<ExperimentResult.PolicyStats, ExperimentResult.Metric> ofStats;

    RunMetric(final String key, final Function<ExperimentRow, Double> ofRow,
              final Function<ExperimentResult.PolicyStats, ExperimentResult.Metric> ofStats) {
        this.key = key;
        this.ofRow = ofRow;
        this.ofStats = ofStats;
    }

    /** The run's value, or null (sim mode has no accuracy; a run that never reached the target no time to it). */
    Double of(final ExperimentRow row) {
        return ofRow.apply(row);
    }

    ExperimentResult.Metric of(final ExperimentResult.PolicyStats stats) {
        return ofStats.apply(stats);
    }
}
