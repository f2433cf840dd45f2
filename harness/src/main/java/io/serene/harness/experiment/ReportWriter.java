package io.serene.harness.experiment;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.training.Json;
import io.serene.training.RoundRecord;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * An experiment's report: one self-contained HTML file (inline SVG charts, no scripts, nothing
 * fetched), per scenario a summary table (mean +- spread over seeds, speed-up and accuracy against
 * BSP) and charts from each policy's first-seed run: test accuracy against time with mode switches
 * marked, cumulative waiting per worker, a timeline of the first rounds (compute, injected
 * straggling, waiting) per worker, and the staleness histogram. The experiment file and the seeds
 * are written into it.
 */
public final class ReportWriter {
    private static final String[] COLORS = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
        "#bcbd22", "#17becf"};
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int W = 640;
    private static final int H = 300;
    private static final int LEFT = 60;
    private static final int RIGHT = 150;
    private static final int TOP = 30;
    private static final int BOTTOM = 40;

    /** A line of points. */
    static final class Series {
        final String name;
        final List<double[]> points;

        Series(final String name, final List<double[]> points) {
            this.name = name;
            this.points = points;
        }
    }

    private ReportWriter() {
    }

    @SuppressWarnings("unchecked")
    static String html(final ExperimentSpec spec, final Map<String, Object> summary, final Map<ExperimentRunner.Run, JsonNode> runs,
                       final boolean quick) throws IOException {
        final StringBuilder sb = new StringBuilder();
        sb.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Serene experiment ")
            .append(esc(spec.name)).append("</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
                + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
                + "th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}pre{background:#f8f8f8;padding:1em;"
                + "overflow:auto}svg{margin:0.5em 0;display:block}.note{color:#555}</style></head><body>\n");
        sb.append("<h1>Serene experiment <code>").append(esc(spec.name)).append("</code></h1>\n");
        sb.append("<p>Mode <b>").append(esc(spec.mode)).append("</b>")
            .append(spec.mode.equals("train") ? ", models <b>" + esc(spec.models.toString()) + "</b>" : "")
            .append(quick ? ", <b>--quick</b>" : "").append(", seeds ").append(esc(spec.seeds.toString())).append(", written ")
            .append(esc(ZonedDateTime.now().format(DateTimeFormatter.RFC_1123_DATE_TIME))).append(".</p>\n");
        final List<Map<String, Object>> scenarios = (List<Map<String, Object>>) summary.get("scenarios");
        final String baseline = (String) summary.get("baseline");
        for (final Map<String, Object> sc : scenarios) {
            final String id = (String) sc.get("id");
            sb.append("<h2>Scenario ").append(esc(id)).append(": ").append(spec.mode.equals("train") ? sc.get("model") + ", " : "")
                .append(sc.get("workers")).append(" workers, stragglers <code>")
                .append(esc((String) sc.get("stragglers"))).append("</code></h2>\n");
            table(sb, (Map<String, Object>) sc.get("policies"), baseline, spec);
            final Map<String, JsonNode> first = new LinkedHashMap<>();
            final Map<String, Path> dirs = new LinkedHashMap<>();
            for (final Map.Entry<ExperimentRunner.Run, JsonNode> e : runs.entrySet()) {
                final ExperimentRunner.Run run = e.getKey();
                if (run.scenario.equals(id) && run.seed == spec.seeds.get(0)) {
                    first.put(run.policy.name, e.getValue());
                    dirs.put(run.policy.name, run.dir);
                }
            }
            if (spec.mode.equals("train")) {
                trainCharts(sb, first, dirs, spec);
            } else {
                simCharts(sb, (Map<String, Object>) sc.get("policies"));
            }
        }
        sb.append("<h2>Experiment file</h2>\n<pre>").append(esc(spec.text)).append("</pre>\n");
        sb.append("<p class=\"note\">Every run's records and summary are under <code>runs/SCENARIO/POLICY/seed-N</code>; all runs in "
            + "<code>summary.csv</code>, the statistics in <code>summary.json</code>.</p>\n</body></html>\n");
        return sb.toString();
    }

    @SuppressWarnings("unchecked")
    private static void table(final StringBuilder sb, final Map<String, Object> policies, final String baseline, final ExperimentSpec spec) {
        final boolean train = spec.mode.equals("train");
        sb.append("<table><tr><th>policy</th><th>JCT (s)</th>");
        if (train) {
            sb.append("<th>time to ").append(fmt(spec.targetAccuracy, 2)).append(" (s)</th>");
        }
        sb.append("<th>cumulative waiting (s)</th><th>compute share</th>");
        if (train) {
            sb.append("<th>final accuracy</th>");
        }
        if (baseline != null) {
            sb.append("<th>speed-up vs ").append(esc(baseline)).append("</th>");
            if (train) {
                sb.append("<th>time-to-accuracy speed-up</th><th>accuracy vs ").append(esc(baseline)).append(" (pp)</th>");
            }
        }
        sb.append("<th>mode switches</th><th>seeds</th></tr>\n");
        policies.forEach((name, v) -> {
            final Map<String, Object> st = (Map<String, Object>) v;
            sb.append("<tr><td>").append(esc(name)).append("</td>").append(cell(st, "jctSeconds", 2));
            if (train) {
                sb.append(cell(st, "ttaSeconds", 2));
            }
            sb.append(cell(st, "cumulativeWaitingSeconds", 1)).append(cell(st, "computeShare", 3));
            if (train) {
                sb.append(cell(st, "finalAccuracy", 4));
            }
            if (baseline != null) {
                sb.append("<td>").append(ratio(st.get("speedupVsBsp"))).append("</td>");
                if (train) {
                    sb.append("<td>").append(ratio(st.get("ttaSpeedupVsBsp"))).append("</td><td>")
                        .append(st.get("accuracyDeltaPp") == null ? "-" : signed((Double) st.get("accuracyDeltaPp"))).append("</td>");
                }
            }
            sb.append("<td>").append(fmt((Double) st.get("modeSwitches"), 1)).append("</td><td>").append(st.get("seeds")).append("</td></tr>\n");
        });
        sb.append("</table>\n<p class=\"note\">mean &plusmn; sample standard deviation over seeds; a time to accuracy only where every "
            + "seed reached the target.</p>\n");
    }

    @SuppressWarnings("unchecked")
    private static String cell(final Map<String, Object> st, final String metric, final int digits) {
        final Map<String, Object> m = (Map<String, Object>) st.get(metric);
        if (m == null || m.get("mean") == null) {
            return "<td>-</td>";
        }
        return "<td>" + fmt((Double) m.get("mean"), digits) + " &plusmn; " + fmt((Double) m.get("std"), digits) + "</td>";
    }

    private static void trainCharts(final StringBuilder sb, final Map<String, JsonNode> first, final Map<String, Path> dirs,
                                    final ExperimentSpec spec) throws IOException {
        final List<Series> accuracy = new ArrayList<>();
        final List<double[]> marks = new ArrayList<>();
        final List<String> markLabels = new ArrayList<>();
        int colorIndex = 0;
        final Map<String, Integer> colors = new LinkedHashMap<>();
        final Map<String, List<RoundRecord>> records = new LinkedHashMap<>();
        for (final Map.Entry<String, Path> e : dirs.entrySet()) {
            records.put(e.getKey(), readRecords(e.getValue()));
        }
        for (final Map.Entry<String, JsonNode> e : first.entrySet()) {
            colors.put(e.getKey(), colorIndex++);
            final List<double[]> points = new ArrayList<>();
            for (final JsonNode p : e.getValue().path("accuracyCurve")) {
                points.add(new double[] {p.path("seconds").asDouble(), p.path("accuracy").asDouble()});
            }
            accuracy.add(new Series(e.getKey(), points));
            final JsonNode switches = e.getValue().path("switches");
            if (switches.size() > 0) {
                final Map<Integer, Double> roundTimes = roundTimes(records.get(e.getKey()));
                for (final JsonNode sw : switches) {
                    final Double t = roundTimes.get(sw.path("round").asInt());
                    if (t != null) {
                        marks.add(new double[] {t, colors.get(e.getKey())});
                        markLabels.add(e.getKey() + ": round " + sw.path("round").asInt() + " " + sw.path("from").asText() + " -> "
                            + sw.path("to").asText());
                    }
                }
            }
        }
        sb.append("<h3>Test accuracy against time</h3>\n");
        sb.append(lineChart("time since training started (s)", "test accuracy", accuracy, marks, markLabels, spec.targetAccuracy));
        if (!markLabels.isEmpty()) {
            sb.append("<p class=\"note\">dashed lines: mode switches (first round in force) &mdash; ")
                .append(esc(String.join("; ", markLabels))).append("</p>\n");
        }
        // cumulative waiting per worker
        final List<String> names = new ArrayList<>(first.keySet());
        int workers = 0;
        for (final JsonNode s : first.values()) {
            workers = Math.max(workers, s.path("waitingSecondsPerWorker").size());
        }
        final double[][] waiting = new double[names.size()][workers];
        for (int p = 0; p < names.size(); p++) {
            final JsonNode w = first.get(names.get(p)).path("waitingSecondsPerWorker");
            for (int i = 0; i < w.size(); i++) {
                waiting[p][i] = w.get(i).asDouble();
            }
        }
        final List<String> groups = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            groups.add("worker " + i);
        }
        sb.append("<h3>Cumulative waiting per worker (s)</h3>\n").append(barChart("waiting (s)", groups, names, waiting));
        // staleness histogram
        int maxStale = 0;
        for (final JsonNode s : first.values()) {
            maxStale = Math.max(maxStale, s.path("staleness").path("max").asInt());
        }
        final double[][] stale = new double[names.size()][maxStale + 1];
        for (int p = 0; p < names.size(); p++) {
            final JsonNode h = first.get(names.get(p)).path("staleness").path("histogram");
            for (int k = 0; k <= maxStale; k++) {
                stale[p][k] = h.path(String.valueOf(k)).asDouble(0);
            }
        }
        final List<String> staleGroups = new ArrayList<>();
        for (int k = 0; k <= maxStale; k++) {
            staleGroups.add("staleness " + k);
        }
        sb.append("<h3>Staleness histogram (gradients computed with k earlier aggregates missing)</h3>\n")
            .append(barChart("worker-rounds", staleGroups, names, stale));
        // timeline of the first rounds
        sb.append("<h3>Round timeline, first 30 rounds (blue: compute, orange: injected straggling, grey: waiting and applying)</h3>\n");
        for (final String name : names) {
            sb.append("<p><b>").append(esc(name)).append("</b></p>\n").append(timeline(records.get(name), 30));
        }
    }

    @SuppressWarnings("unchecked")
    private static void simCharts(final StringBuilder sb, final Map<String, Object> policies) {
        final List<String> names = new ArrayList<>(policies.keySet());
        final double[][] jct = new double[names.size()][1];
        final double[][] waiting = new double[names.size()][1];
        for (int p = 0; p < names.size(); p++) {
            final Map<String, Object> st = (Map<String, Object>) policies.get(names.get(p));
            jct[p][0] = orZero(ExperimentSummary.mean(st, "jctSeconds"));
            waiting[p][0] = orZero(ExperimentSummary.mean(st, "cumulativeWaitingSeconds"));
        }
        sb.append("<h3>JCT (virtual s)</h3>\n").append(barChart("JCT (s)", List.of("mean over seeds"), names, jct));
        sb.append("<h3>Cumulative waiting (virtual s)</h3>\n").append(barChart("waiting (s)", List.of("mean over seeds"), names, waiting));
    }

    /** A run's round records (records.jsonl), empty if it has none. */
    private static List<RoundRecord> readRecords(final Path dir) throws IOException {
        final List<RoundRecord> lines = new ArrayList<>();
        final Path records = dir.resolve("records.jsonl");
        if (Files.isRegularFile(records)) {
            for (final String line : Files.readAllLines(records, StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    lines.add(Json.read(line, RoundRecord.class));
                }
            }
        }
        return lines;
    }

    /** Per round: when worker 0 started it, on the run's axis from its first start (for marking switches). */
    private static Map<Integer, Double> roundTimes(final List<RoundRecord> records) {
        double t0 = Double.MAX_VALUE;
        for (final RoundRecord n : records) {
            t0 = Math.min(t0, n.startSeconds());
        }
        final Map<Integer, Double> times = new LinkedHashMap<>();
        for (final RoundRecord n : records) {
            if (n.worker() == 0) {
                times.put(n.round(), n.startSeconds() - t0);
            }
        }
        return times;
    }

    private static String timeline(final List<RoundRecord> records, final int rounds) {
        if (records.isEmpty()) {
            return "<p class=\"note\">no records</p>\n";
        }
        final List<RoundRecord> lines = new ArrayList<>();
        double t0 = Double.MAX_VALUE;
        double t1 = 0;
        int workers = 0;
        for (final RoundRecord n : records) {
            if (n.round() < rounds) {
                lines.add(n);
                t0 = Math.min(t0, n.startSeconds());
                t1 = Math.max(t1, n.sendSeconds());
                workers = Math.max(workers, n.worker() + 1);
            }
        }
        final int rowH = 18;
        final int height = TOP + workers * rowH + BOTTOM;
        final double span = Math.max(1e-3, t1 - t0);
        final StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">",
            W, height, W, height));
        final double plotW = W - LEFT - 20;
        for (final RoundRecord n : lines) {
            final int w = n.worker();
            final double start = n.startSeconds() - t0;
            final double send = n.sendSeconds() - t0;
            final double injected = n.injectedSeconds();
            final double compute = n.computeSeconds();
            final double computeStart = Math.max(start, send - injected - compute);
            final double y = TOP + w * rowH;
            rect(s, LEFT + start / span * plotW, y, (computeStart - start) / span * plotW, rowH - 4, "#bbbbbb");
            rect(s, LEFT + computeStart / span * plotW, y, compute / span * plotW, rowH - 4, COLORS[0]);
            rect(s, LEFT + (send - injected) / span * plotW, y, injected / span * plotW, rowH - 4, COLORS[3]);
        }
        for (int w = 0; w < workers; w++) {
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">worker %d</text>", LEFT - 4,
                TOP + w * rowH + 11, w));
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"11\">0 s</text><text x=\"%d\" y=\"%d\" font-size=\"11\" "
            + "text-anchor=\"end\">%s s</text>", LEFT, height - 20, W - 20, height - 20, fmt(span, 2)));
        return s.append("</svg>\n").toString();
    }

    private static void rect(final StringBuilder s, final double x, final double y, final double w, final double h, final String color) {
        if (w > 0) {
            s.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>", x, y,
                Math.max(w, 0.5), h, color));
        }
    }

    /** A line chart; marks are vertical dashed lines at x in the color of series (int) mark[1]; target a dotted horizontal line. */
    static String lineChart(final String xLabel, final String yLabel, final List<Series> series, final List<double[]> marks,
                            final List<String> markLabels, final double target) {
        double maxX = 0;
        double minY = target;
        double maxY = target;
        for (final Series s : series) {
            for (final double[] p : s.points) {
                maxX = Math.max(maxX, p[0]);
                minY = Math.min(minY, p[1]);
                maxY = Math.max(maxY, p[1]);
            }
        }
        minY = Math.max(0, Math.floor(minY * 10) / 10);
        maxY = Math.min(1, Math.ceil(maxY * 10) / 10 + 0.001);
        if (maxX <= 0) {
            maxX = 1;
        }
        final double plotW = W - LEFT - RIGHT;
        final double plotH = H - TOP - BOTTOM;
        final double x0 = LEFT;
        final double y0 = TOP + plotH;
        final double sx = plotW / maxX;
        final double sy = plotH / Math.max(1e-9, maxY - minY);
        final StringBuilder s = svgStart(H);
        axes(s, plotW, plotH, xLabel, yLabel, fmt(maxX, 1), fmt(minY, 2), fmt(maxY, 2));
        final double ty = y0 - (target - minY) * sy;
        s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"2,3\"/>"
            + "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#666\">target %s</text>", x0, ty, x0 + plotW, ty, x0 + 4, ty - 3,
            fmt(target, 2)));
        for (final double[] m : marks) {
            final double x = x0 + m[0] * sx;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-dasharray=\"5,4\"/>",
                x, TOP, x, y0, COLORS[(int) m[1] % COLORS.length]));
        }
        for (int i = 0; i < series.size(); i++) {
            final Series ser = series.get(i);
            final StringBuilder pts = new StringBuilder();
            for (final double[] p : ser.points) {
                pts.append(String.format(Locale.ROOT, "%.1f,%.1f ", x0 + p[0] * sx, y0 - (p[1] - minY) * sy));
            }
            s.append(String.format(Locale.ROOT, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>",
                COLORS[i % COLORS.length], pts.toString().trim()));
            legend(s, i, ser.name);
        }
        return s.append("</svg>\n").toString();
    }

    /** Grouped bars: values[series][group]. */
    static String barChart(final String yLabel, final List<String> groups, final List<String> seriesNames, final double[][] values) {
        double max = 0;
        for (final double[] row : values) {
            for (final double v : row) {
                max = Math.max(max, v);
            }
        }
        if (max <= 0) {
            max = 1;
        }
        final double plotW = W - LEFT - RIGHT;
        final double plotH = H - TOP - BOTTOM;
        final double y0 = TOP + plotH;
        final StringBuilder s = svgStart(H);
        axes(s, plotW, plotH, "", yLabel, "", "0", fmt(max, 2));
        final double groupW = plotW / Math.max(1, groups.size());
        final double barW = groupW * 0.8 / Math.max(1, seriesNames.size());
        for (int g = 0; g < groups.size(); g++) {
            for (int p = 0; p < seriesNames.size(); p++) {
                final double v = g < values[p].length ? values[p][g] : 0;
                final double h = v / max * plotH;
                s.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%s, %s: %s"
                    + "</title></rect>", LEFT + g * groupW + groupW * 0.1 + p * barW, y0 - h, barW, h, COLORS[p % COLORS.length],
                    esc(seriesNames.get(p)), esc(groups.get(g)), fmt(v, 3)));
            }
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>",
                LEFT + g * groupW + groupW / 2, y0 + 14, esc(groups.get(g))));
        }
        for (int p = 0; p < seriesNames.size(); p++) {
            legend(s, p, seriesNames.get(p));
        }
        return s.append("</svg>\n").toString();
    }

    private static StringBuilder svgStart(final int height) {
        return new StringBuilder(String.format(Locale.ROOT,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">",
            W, height, W, height));
    }

    private static void axes(final StringBuilder s, final double plotW, final double plotH, final String xLabel, final String yLabel,
                             final String maxX, final String minY, final String maxY) {
        final double y0 = TOP + plotH;
        s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>", LEFT, TOP, LEFT, y0));
        s.append(String.format(Locale.ROOT, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>", LEFT, y0, LEFT + plotW, y0));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>", LEFT - 4, y0, esc(minY)));
        s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%s</text>", LEFT - 4, TOP + 8, esc(maxY)));
        if (!maxX.isEmpty()) {
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\">0</text>", LEFT, y0 + 14));
            s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%s</text>", LEFT + plotW,
                y0 + 14, esc(maxX)));
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%s</text>", LEFT + plotW / 2,
            y0 + 32, esc(xLabel)));
        s.append(String.format(Locale.ROOT, "<text x=\"14\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">"
            + "%s</text>", TOP + plotH / 2, TOP + plotH / 2, esc(yLabel)));
    }

    private static void legend(final StringBuilder s, final int i, final String name) {
        final int x = W - RIGHT + 10;
        final int y = TOP + 14 * i;
        s.append(String.format(Locale.ROOT, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%d\" "
            + "font-size=\"11\">%s</text>", x, y, COLORS[i % COLORS.length], x + 14, y + 9, esc(name)));
    }

    private static double orZero(final Double v) {
        return v == null ? 0 : v;
    }

    private static String ratio(final Object v) {
        return v == null ? "-" : fmt((Double) v, 2) + "x";
    }

    private static String signed(final double v) {
        return (v >= 0 ? "+" : "") + fmt(v, 2);
    }

    public static String fmt(final Double v, final int digits) {
        return v == null ? "-" : String.format(Locale.ROOT, "%." + digits + "f", v);
    }

    static String esc(final String s) {
        return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
    }
}
