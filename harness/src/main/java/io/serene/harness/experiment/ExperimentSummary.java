package io.serene.harness.experiment;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * An experiment's figures: per scenario and policy, the mean and spread (sample standard deviation,
 * 0 for one seed) over seeds of JCT, time to accuracy, cumulative waiting, compute share and final
 * accuracy, and against BSP in the same scenario: the speed-up of the mean JCT and of the mean time
 * to accuracy, and the final accuracy's difference in percentage points. Across scenarios, each
 * policy's figures are the mean of its per-scenario ones.
 */
final class ExperimentSummary {
    static final List<String> METRICS = List.of("jctSeconds", "ttaSeconds", "cumulativeWaitingSeconds", "computeShare", "finalAccuracy");

    private ExperimentSummary() {
    }

    /** summary.json: the experiment, its scenarios with per-policy statistics, each policy across scenarios, and every run. */
    static Map<String, Object> aggregate(final ExperimentSpec spec, final List<Map<String, Object>> rows) {
        final Map<String, Map<String, List<Map<String, Object>>>> byScenario = new LinkedHashMap<>();
        for (final Map<String, Object> row : rows) {
            byScenario.computeIfAbsent((String) row.get("scenario"), k -> new LinkedHashMap<>())
                .computeIfAbsent((String) row.get("policy"), k -> new ArrayList<>()).add(row);
        }
        final String bspName = spec.policies.stream().filter(ExperimentSpec.PolicyRef::isBsp).map(p -> p.name).findFirst().orElse(null);
        final List<Map<String, Object>> scenarios = new ArrayList<>();
        final Map<String, List<Map<String, Object>>> perPolicy = new LinkedHashMap<>();
        byScenario.forEach((scenario, policies) -> {
            final Map<String, Object> sc = new LinkedHashMap<>();
            final Map<String, Object> first = policies.values().iterator().next().get(0);
            sc.put("id", scenario);
            sc.put("model", first.get("model"));
            sc.put("workers", first.get("workers"));
            sc.put("stragglers", first.get("stragglers"));
            final Map<String, Object> stats = new LinkedHashMap<>();
            final Map<String, Object> bsp = bspName == null || !policies.containsKey(bspName) ? null : statistics(policies.get(bspName));
            policies.forEach((policy, runs) -> {
                final Map<String, Object> st = statistics(runs);
                if (bsp != null) {
                    st.put("speedupVsBsp", ratio(mean(bsp, "jctSeconds"), mean(st, "jctSeconds")));
                    st.put("ttaSpeedupVsBsp", ratio(mean(bsp, "ttaSeconds"), mean(st, "ttaSeconds")));
                    final Double a = mean(st, "finalAccuracy");
                    final Double b = mean(bsp, "finalAccuracy");
                    st.put("accuracyDeltaPp", a == null || b == null ? null : (a - b) * 100);
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

    /** One row per run, with a header. */
    static String csv(final List<Map<String, Object>> rows) {
        final StringBuilder sb = new StringBuilder();
        final List<String> columns = new ArrayList<>(rows.isEmpty() ? List.of() : rows.get(0).keySet());
        sb.append(String.join(",", columns)).append('\n');
        for (final Map<String, Object> row : rows) {
            final List<String> cells = new ArrayList<>();
            for (final String c : columns) {
                final Object v = row.get(c);
                final String text = v == null ? "" : v instanceof Double ? String.format(Locale.ROOT, "%.6f", (Double) v) : v.toString();
                cells.add(text.contains(",") || text.contains("\"") ? "\"" + text.replace("\"", "\"\"") + "\"" : text);
            }
            sb.append(String.join(",", cells)).append('\n');
        }
        return sb.toString();
    }

    private static Map<String, Object> statistics(final List<Map<String, Object>> runs) {
        final Map<String, Object> st = new LinkedHashMap<>();
        for (final String metric : METRICS) {
            final List<Double> values = new ArrayList<>();
            int missing = 0;
            for (final Map<String, Object> r : runs) {
                if (r.get(metric) == null) {
                    missing++;
                } else {
                    values.add((Double) r.get(metric));
                }
            }
            final Map<String, Object> m = new LinkedHashMap<>();
            if (values.isEmpty() || (metric.equals("ttaSeconds") && missing > 0)) {
                // a time to accuracy exists only if every seed reached the target
                m.put("mean", null);
                m.put("std", null);
            } else {
                final double mean = values.stream().mapToDouble(Double::doubleValue).average().orElse(0);
                double var = 0;
                for (final double v : values) {
                    var += (v - mean) * (v - mean);
                }
                m.put("mean", mean);
                m.put("std", values.size() > 1 ? Math.sqrt(var / (values.size() - 1)) : 0.0);
            }
            m.put("n", values.size());
            st.put(metric, m);
        }
        st.put("modeSwitches", runs.stream().mapToInt(r -> (int) r.get("modeSwitches")).average().orElse(0));
        st.put("seeds", runs.size());
        return st;
    }

    @SuppressWarnings("unchecked")
    static Double mean(final Map<String, Object> stats, final String metric) {
        final Object m = stats.get(metric);
        return m == null ? null : (Double) ((Map<String, Object>) m).get("mean");
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
