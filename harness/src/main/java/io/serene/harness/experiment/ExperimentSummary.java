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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An experiment's figures: per scenario and policy, the mean, spread (sample standard deviation,
 * 0 for one seed) and 95% t-interval over seeds of JCT, time to accuracy, cumulative waiting,
 * compute share and final accuracy, and against BSP in the same scenario: the speed-up of the mean
 * JCT and of the mean time to accuracy, the final accuracy's difference in percentage points, each
 * with Welch's p-value for the means differing. Across scenarios, each policy's figures are the
 * mean of its per-scenario ones.
 */
final class ExperimentSummary {
    /** Against the baseline, per scenario and policy. */
    static final List<String> BASELINE_KEYS = List.of("speedupVsBsp", "speedupWelchP", "ttaSpeedupVsBsp", "ttaSpeedupWelchP",
        "accuracyDeltaPp", "accuracyWelchP");
    static final List<String> METRICS = List.of("jctSeconds", "ttaSeconds", "cumulativeWaitingSeconds", "computeShare", "finalAccuracy");

    private ExperimentSummary() {
    }

    /** summary.json: the experiment, its scenarios with per-policy statistics, each policy across scenarios, and every run. */
    static Map<String, Object> aggregate(final ExperimentSpec spec, final List<ExperimentRow> rows) {
        final Map<String, Map<String, List<ExperimentRow>>> byScenario = new LinkedHashMap<>();
        for (final ExperimentRow row : rows) {
            byScenario.computeIfAbsent(row.scenario(), k -> new LinkedHashMap<>())
                .computeIfAbsent(row.policy(), k -> new ArrayList<>()).add(row);
        }
        final String bspName = spec.policies.stream().filter(ExperimentSpec.PolicyRef::isBsp).map(p -> p.name).findFirst().orElse(null);
        final List<Map<String, Object>> scenarios = new ArrayList<>();
        final Map<String, List<Map<String, Object>>> perPolicy = new LinkedHashMap<>();
        byScenario.forEach((scenario, policies) -> {
            final Map<String, Object> sc = new LinkedHashMap<>();
            final ExperimentRow first = policies.values().iterator().next().get(0);
            sc.put("id", scenario);
            sc.put("model", first.model());
            sc.put("workers", first.workers());
            sc.put("stragglers", first.stragglers());
            final Map<String, Object> stats = new LinkedHashMap<>();
            final List<ExperimentRow> bspRuns = bspName == null ? null : policies.get(bspName);
            final Map<String, Object> bsp = bspRuns == null ? null : statistics(bspRuns);
            policies.forEach((policy, runs) -> {
                final Map<String, Object> st = statistics(runs);
                if (bsp != null) {
                    st.put("speedupVsBsp", ratio(mean(bsp, "jctSeconds"), mean(st, "jctSeconds")));
                    st.put("speedupWelchP", SeedStatistics.welchP(values(runs, "jctSeconds"), values(bspRuns, "jctSeconds")));
                    st.put("ttaSpeedupVsBsp", ratio(mean(bsp, "ttaSeconds"), mean(st, "ttaSeconds")));
                    st.put("ttaSpeedupWelchP", mean(st, "ttaSeconds") == null || mean(bsp, "ttaSeconds") == null ? null
                        : SeedStatistics.welchP(values(runs, "ttaSeconds"), values(bspRuns, "ttaSeconds")));
                    final Double a = mean(st, "finalAccuracy");
                    final Double b = mean(bsp, "finalAccuracy");
                    st.put("accuracyDeltaPp", a == null || b == null ? null : (a - b) * 100);
                    st.put("accuracyWelchP", a == null || b == null ? null
                        : SeedStatistics.welchP(values(runs, "finalAccuracy"), values(bspRuns, "finalAccuracy")));
                }
                stats.put(policy, st);
                perPolicy.computeIfAbsent(policy, k -> new ArrayList<>()).add(st);
            });
            sc.put("policies", stats);
            scenarios.add(sc);
        });
        final Map<String, Object> across = new LinkedHashMap<>();
        perPolicy.forEach((policy, list) -> {
            final Map<String, Object> m = new LinkedHashMap<>();
            for (final String key : List.of("speedupVsBsp", "ttaSpeedupVsBsp", "accuracyDeltaPp")) {
                m.put(key, meanOf(list, key, null));
            }
            for (final String metric : METRICS) {
                m.put(metric, meanOf(list, metric, "mean"));
            }
            m.put("scenarios", list.size());
            across.put(policy, m);
        });
        final Map<String, Object> out = new LinkedHashMap<>();
        out.put("schemaVersion", Json.SCHEMA_VERSION);
        out.put("experiment", spec.name);
        out.put("mode", spec.mode);
        out.put("models", spec.mode.equals("train") ? spec.models.stream().map(Object::toString).toList() : null);
        out.put("seeds", spec.seeds);
        out.put("targetAccuracy", spec.mode.equals("train") ? spec.targetAccuracy : null);
        out.put("baseline", bspName);
        out.put("policies", across);
        out.put("scenarios", scenarios);
        out.put("runs", rows);
        return out;
    }

    /**
     * scenarios.csv: per scenario and policy, the seeds, each metric's mean and 95% interval, and
     * against the baseline the speed-ups and accuracy difference with their Welch p-values.
     */
    @SuppressWarnings("unchecked")
    static void writeScenarioCsv(final Path file, final Map<String, Object> aggregate) throws IOException {
        final CsvSchema.Builder columns = CsvSchema.builder().addColumn("scenario").addColumn("policy").addColumn("seeds");
        for (final String metric : METRICS) {
            columns.addColumn(metric + "Mean").addColumn(metric + "Ci95Low").addColumn(metric + "Ci95High");
        }
        for (final String key : BASELINE_KEYS) {
            columns.addColumn(key);
        }
        final List<Map<String, Object>> rows = new ArrayList<>();
        for (final Map<String, Object> sc : (List<Map<String, Object>>) aggregate.get("scenarios")) {
            ((Map<String, Object>) sc.get("policies")).forEach((policy, v) -> {
                final Map<String, Object> st = (Map<String, Object>) v;
                final Map<String, Object> row = new LinkedHashMap<>();
                row.put("scenario", sc.get("id"));
                row.put("policy", policy);
                row.put("seeds", st.get("seeds"));
                for (final String metric : METRICS) {
                    final double[] ci = interval(st, metric);
                    row.put(metric + "Mean", mean(st, metric));
                    row.put(metric + "Ci95Low", ci == null ? null : ci[0]);
                    row.put(metric + "Ci95High", ci == null ? null : ci[1]);
                }
                for (final String key : BASELINE_KEYS) {
                    row.put(key, st.get(key));
                }
                rows.add(row);
            });
        }
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            new CsvMapper().writer(columns.build().withHeader().withNullValue("")).writeValues(out).writeAll(rows).close();
        }
    }

    /** A metric's values over the runs that have it. */
    private static List<Double> values(final List<ExperimentRow> runs, final String metric) {
        final List<Double> values = new ArrayList<>();
        for (final ExperimentRow r : runs) {
            if (r.metric(metric) != null) {
                values.add(r.metric(metric));
            }
        }
        return values;
    }

    private static Map<String, Object> statistics(final List<ExperimentRow> runs) {
        final Map<String, Object> st = new LinkedHashMap<>();
        for (final String metric : METRICS) {
            final List<Double> values = values(runs, metric);
            final int missing = runs.size() - values.size();
            final Map<String, Object> m = new LinkedHashMap<>();
            if (values.isEmpty() || (metric.equals("ttaSeconds") && missing > 0)) {
                // a time to accuracy exists only if every seed reached the target
                m.put("mean", null);
                m.put("std", null);
                m.put("ci95", null);
            } else {
                final double mean = values.stream().mapToDouble(Double::doubleValue).average().orElse(0);
                double var = 0;
                for (final double v : values) {
                    var += (v - mean) * (v - mean);
                }
                m.put("mean", mean);
                m.put("std", values.size() > 1 ? Math.sqrt(var / (values.size() - 1)) : 0.0);
                m.put("ci95", SeedStatistics.tInterval(values));
            }
            m.put("n", values.size());
            st.put(metric, m);
        }
        st.put("modeSwitches", runs.stream().mapToInt(ExperimentRow::modeSwitches).average().orElse(0));
        st.put("seeds", runs.size());
        return st;
    }

    @SuppressWarnings("unchecked")
    static Double mean(final Map<String, Object> stats, final String metric) {
        final Object m = stats.get(metric);
        return m == null ? null : (Double) ((Map<String, Object>) m).get("mean");
    }

    /** A metric's 95% t-interval {low, high}, or null. */
    @SuppressWarnings("unchecked")
    static double[] interval(final Map<String, Object> stats, final String metric) {
        final Object m = stats.get(metric);
        return m == null ? null : (double[]) ((Map<String, Object>) m).get("ci95");
    }

    private static Double ratio(final Double baseline, final Double value) {
        return baseline == null || value == null || value == 0 ? null : baseline / value;
    }

    @SuppressWarnings("unchecked")
    private static Double meanOf(final List<Map<String, Object>> list, final String key, final String inner) {
        double sum = 0;
        int n = 0;
        for (final Map<String, Object> st : list) {
            Object v = st.get(key);
            if (inner != null && v != null) {
                v = ((Map<String, Object>) v).get(inner);
            }
            if (v == null) {
                return null;
            }
            sum += (Double) v;
            n++;
        }
        return n == 0 ? null : sum / n;
    }
}
