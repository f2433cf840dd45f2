package io.serene.harness.experiment;

import java.util.List;
import java.util.Map;

/**
 * A simulated run's {@code summary.json} in an experiment (sim mode), written and read as this type:
 * the figures in virtual seconds, the controller's switches, the invariant checks and the whole
 * {@code serene sim --json} result.
 */
public record SimRunSummary(int schemaVersion, double jctSeconds, double cumulativeWaitingSeconds, double computeShare,
                            Staleness staleness, int modeSwitches, List<Object> switches, boolean checks, Map<String, Object> sim,
                            long seed) {
    /** The staleness of applied aggregates over the run. */
    public record Staleness(int max, double mean) {
    }
}
