package io.serene.harness.experiment;

import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import io.serene.training.Json;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * An experiment's figures: per scenario and policy, the mean, spread (sample standard deviation,
 * 0 for one seed) and 95% t-interval over seeds of JCT, time to accuracy, cumulative waiting,
 * compute share and final accuracy, and against BSP in the same scenario: the speed-up of the mean
 * JCT and of the mean time to accuracy, the final accuracy's difference in percentage points, each
 * with Welch's p-value for the means differing, and the two speed-ups paired by seed with their 95%
 * intervals (the runs of a seed are made one after another, so a pair saw the same machine: a
 * paired ratio separates policies with fewer seeds than the ratio of means). Across scenarios, each policy's figures are the
 * mean of its per-scenario ones.
 */
final class ExperimentSummary {
    /** Against the baseline, per scenario and policy. */
    static final List<String> BASELINE_KEYS = List.of("speedupVsBsp", "speedupWelchP", "ttaSpeedupVsBsp", "ttaSpeedupWelchP",
        "accuracyDeltaPp", "accuracyWelchP", "pairedSpeedup", "pairedSpeedupCi95Low", "pairedSpeedupCi95High",
        "pairedTtaSpeedup", "pairedTtaSpeedupCi95Low", "pairedTtaSpeedupCi95High");

    private ExperimentSummary() {
    }

    /** summary.json: the experiment, its scenarios with per-policy statistics, each policy across scenarios, and every run. */
    static ExperimentResult aggregate(final ExperimentSpec spec, final List<ExperimentRow> rows, final boolean quick) {
        final Map<String, Map<String, List<ExperimentRow>>> byScenario = new LinkedHashMap<>();
        for (final ExperimentRow row : rows) {
            byScenario.computeIfAbsent(row.scenario(), k -> new LinkedHashMap<>())
                .computeIfAbsent(row.policy(), k -> new ArrayList<>()).add(row);
        }
        final String bspName = spec.policies.stream().filter(PolicyRef::isBsp).map(p -> p.name).findFirst().orElse(null);
        final List<ExperimentResult.Scenario> scenarios = new ArrayList<>();
        final Map<String, List<ExperimentResult.PolicyStats>> perPolicy = new LinkedHashMap<>();
        byScenario.forEach((scenario, policies) -> {
            final ExperimentRow first = policies.values().iterator().next().get(0);
            final Map<String, ExperimentResult.PolicyStats> stats = new LinkedHashMap<>();
            final List<ExperimentRow> bspRuns = bspName == null ? null : policies.get(bspName);
            policies.forEach((policy, runs) -> {
                final ExperimentResult.PolicyStats st = statistics(runs, bspRuns);
                stats.put(policy, st);
                perPolicy.computeIfAbsent(policy, k -> new ArrayList<>()).add(st);
            });
            scenarios.add(new ExperimentResult.Scenario(scenario, first.model(), first.workers(), first.stragglers(), stats));
        });
        final Map<String, ExperimentResult.Across> across = new LinkedHashMap<>();
        perPolicy.forEach((policy, list) -> across.put(policy, new ExperimentResult.Across(
            meanOf(list, ExperimentResult.PolicyStats::speedupVsBsp), meanOf(list, ExperimentResult.PolicyStats::ttaSpeedupVsBsp),
            meanOf(list, ExperimentResult.PolicyStats::accuracyDeltaPp), meanOf(list, st -> st.jctSeconds().mean()),
            meanOf(list, st -> st.ttaSeconds().mean()), meanOf(list, st -> st.cumulativeWaitingSeconds().mean()),
            meanOf(list, st -> st.computeShare().mean()), meanOf(list, st -> st.finalAccuracy().mean()), list.size())));
        final boolean train = spec.mode.equals("train");
        return new ExperimentResult(Json.SCHEMA_VERSION, spec.name, spec.mode, train ? spec.models.stream().map(Object::toString).toList() : null,
            spec.seeds.stream().map(Number::longValue).toList(), train ? spec.targetAccuracy : null, bspName, across, scenarios, rows, quick);
    }

    /**
     * scenarios.csv: per scenario and policy, the seeds, each metric's mean and 95% interval, and
     * against the baseline the speed-ups and accuracy difference with their Welch p-values.
     */
    static void writeScenarioCsv(final Path file, final ExperimentResult result) throws IOException {
        final CsvSchema.Builder columns = CsvSchema.builder().addColumn("scenario").addColumn("policy").addColumn("seeds");
        for (final RunMetric metric : RunMetric.values()) {
            columns.addColumn(metric.key + "Mean").addColumn(metric.key + "Ci95Low").addColumn(metric.key + "Ci95High");
        }
        for (final String key : BASELINE_KEYS) {
            columns.addColumn(key);
        }
        final List<Map<String, Object>> rows = new ArrayList<>();
        for (final ExperimentResult.Scenario sc : result.scenarios()) {
            sc.policies().forEach((policy, st) -> {
                final Map<String, Object> row = new LinkedHashMap<>();
                row.put("scenario", sc.id());
                row.put("policy", policy);
                row.put("seeds", st.seeds());
                for (final RunMetric metric : RunMetric.values()) {
                    final ExperimentResult.Metric m = metric.of(st);
                    row.put(metric.key + "Mean", m.mean());
                    row.put(metric.key + "Ci95Low", m.ci95() == null ? null : m.ci95().get(0));
                    row.put(metric.key + "Ci95High", m.ci95() == null ? null : m.ci95().get(1));
                }
                final List<Double> baseline = new ArrayList<>(Arrays.asList(st.speedupVsBsp(), st.speedupWelchP(),
                    st.ttaSpeedupVsBsp(), st.ttaSpeedupWelchP(), st.accuracyDeltaPp(), st.accuracyWelchP()));
                baseline.addAll(st.pairedSpeedup() == null ? Arrays.asList(null, null, null) : st.pairedSpeedup());
                baseline.addAll(st.pairedTtaSpeedup() == null ? Arrays.asList(null, null, null) : st.pairedTtaSpeedup());
                for (int k = 0; k < BASELINE_KEYS.size(); k++) {
                    row.put(BASELINE_KEYS.get(k), baseline.get(k));
                }
                rows.add(row);
            });
        }
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            new CsvMapper().writer(columns.build().withHeader().withNullValue("")).writeValues(out).writeAll(rows).close();
        }
    }

    /** A metric's values over the runs that have it. */
    private static List<Double> values(final List<ExperimentRow> runs, final RunMetric metric) {
        final List<Double> values = new ArrayList<>();
        for (final ExperimentRow r : runs) {
            if (metric.of(r) != null) {
                values.add(metric.of(r));
            }
        }
        return values;
    }

    private static ExperimentResult.Metric metric(final List<ExperimentRow> runs, final RunMetric metric) {
        final List<Double> values = values(runs, metric);
        if (values.isEmpty() || (metric == RunMetric.TTA && values.size() < runs.size())) {
            // a time to accuracy exists only if every seed reached the target
            return new ExperimentResult.Metric(null, null, null, values.size());
        }
        final double mean = SeedStatistics.mean(values);
        double var = 0;
        for (final double v : values) {
            var += (v - mean) * (v - mean);
        }
        final double[] ci = SeedStatistics.tInterval(values);
        return new ExperimentResult.Metric(mean, values.size() > 1 ? Math.sqrt(var / (values.size() - 1)) : 0.0,
            ci == null ? null : List.of(ci[0], ci[1]), values.size());
    }

    /** A policy's statistics in a scenario, against the baseline's runs there (null: none). */
    private static ExperimentResult.PolicyStats statistics(final List<ExperimentRow> runs, final List<ExperimentRow> bspRuns) {
        final ExperimentResult.Metric jct = metric(runs, RunMetric.JCT);
        final ExperimentResult.Metric tta = metric(runs, RunMetric.TTA);
        final ExperimentResult.Metric accuracy = metric(runs, RunMetric.ACCURACY);
        Double speedup = null;
        Double speedupP = null;
        Double ttaSpeedup = null;
        Double ttaP = null;
        Double delta = null;
        Double deltaP = null;
        List<Double> paired = null;
        List<Double> pairedTta = null;
        if (bspRuns != null) {
            final ExperimentResult.Metric bJct = metric(bspRuns, RunMetric.JCT);
            final ExperimentResult.Metric bTta = metric(bspRuns, RunMetric.TTA);
            final ExperimentResult.Metric bAccuracy = metric(bspRuns, RunMetric.ACCURACY);
            speedup = ratio(bJct.mean(), jct.mean());
            speedupP = SeedStatistics.welchP(values(runs, RunMetric.JCT), values(bspRuns, RunMetric.JCT));
            ttaSpeedup = ratio(bTta.mean(), tta.mean());
            ttaP = tta.mean() == null || bTta.mean() == null ? null
                : SeedStatistics.welchP(values(runs, RunMetric.TTA), values(bspRuns, RunMetric.TTA));
            delta = accuracy.mean() == null || bAccuracy.mean() == null ? null : (accuracy.mean() - bAccuracy.mean()) * 100;
            deltaP = delta == null ? null : SeedStatistics.welchP(values(runs, RunMetric.ACCURACY), values(bspRuns, RunMetric.ACCURACY));
            paired = asList(SeedStatistics.pairedSpeedup(bySeed(bspRuns, RunMetric.JCT), bySeed(runs, RunMetric.JCT)));
            // a time to accuracy is paired only where both reached the target
            pairedTta = tta.mean() == null || bTta.mean() == null ? null
                : asList(SeedStatistics.pairedSpeedup(bySeed(bspRuns, RunMetric.TTA), bySeed(runs, RunMetric.TTA)));
        }
        return new ExperimentResult.PolicyStats(jct, tta, metric(runs, RunMetric.WAITING), metric(runs, RunMetric.COMPUTE_SHARE), accuracy,
            runs.stream().mapToInt(ExperimentRow::modeSwitches).average().orElse(0), runs.size(), speedup, speedupP, ttaSpeedup, ttaP, delta,
            deltaP, paired, pairedTta);
    }

    /** A metric's value per seed, where a run has it. */
    private static Map<Long, Double> bySeed(final List<ExperimentRow> runs, final RunMetric metric) {
        final Map<Long, Double> values = new LinkedHashMap<>();
        for (final ExperimentRow r : runs) {
            if (metric.of(r) != null) {
                values.put(r.seed(), metric.of(r));
            }
        }
        return values;
    }

    private static List<Double> asList(final double[] values) {
        return values == null ? null : List.of(values[0], values[1], values[2]);
    }

    private static Double ratio(final Double baseline, final Double value) {
        return baseline == null || value == null || value == 0 ? null : baseline / value;
    }

    /** The mean over scenarios of a figure, null if any scenario lacks it. */
    private static Double meanOf(final List<ExperimentResult.PolicyStats> list, final Function<ExperimentResult.PolicyStats, Double> figure) {
        double sum = 0;
        for (final ExperimentResult.PolicyStats st : list) {
            final Double v = figure.apply(st);
            if (v == null) {
                return null;
            }
            sum += v;
        }
        return list.isEmpty() ? null : sum / list.size();
    }
}
