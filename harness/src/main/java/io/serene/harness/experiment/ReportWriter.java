package io.serene.harness.experiment;

import io.serene.launch.RunSummary;
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
    private static final int LEFT = SvgChart.LEFT;
    private static final int TOP = SvgChart.TOP;
    private static final int BOTTOM = SvgChart.BOTTOM;
    private static final int W = SvgChart.W;

    private ReportWriter() {
    }

    @SuppressWarnings("unchecked")
    static String html(final ExperimentSpec spec, final ExperimentResult summary, final Map<ExperimentRunner.Run, RunSummary> runs,
                       final boolean quick, final Map<String, String> charts) throws IOException {
        final StringBuilder sb = new StringBuilder();
        sb.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Serene experiment ")
            .append(esc(spec.name)).append("</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1100px}"
                + "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
                + "th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}pre{background:#f8f8f8;padding:1em;"
                + "overflow:auto}svg{margin:0.5em 0;display:block}.note{color:#555}.ci,.p{color:#555;font-size:85%}"
                + "a.svg{font-size:70%;font-weight:normal}</style></head><body>\n");
        sb.append("<h1>Serene experiment <code>").append(esc(spec.name)).append("</code></h1>\n");
        sb.append("<p>Mode <b>").append(esc(spec.mode)).append("</b>")
            .append(spec.mode.equals("train") ? ", models <b>" + esc(spec.models.toString()) + "</b>" : "")
            .append(quick ? ", <b>--quick</b>" : "").append(", seeds ").append(esc(spec.seeds.toString())).append(", written ")
            .append(esc(ZonedDateTime.now().format(DateTimeFormatter.RFC_1123_DATE_TIME))).append(".</p>\n");
        if (spec.mode.equals("train")) {
            sb.append("<p>").append(esc(clockNote(spec, runs))).append("</p>\n");
        }
        final String baseline = summary.baseline();
        for (final ExperimentResult.Scenario sc : summary.scenarios()) {
            final String id = sc.id();
            sb.append("<h2>Scenario ").append(esc(id)).append(": ").append(spec.mode.equals("train") ? sc.model() + ", " : "")
                .append(sc.workers()).append(" workers, stragglers <code>")
                .append(esc(sc.stragglers())).append("</code></h2>\n");
            table(sb, sc.policies(), baseline, spec);
            final List<String> failures = new ArrayList<>();
            for (final Map.Entry<ExperimentRunner.Run, RunSummary> e : runs.entrySet()) {
                if (e.getKey().scenario.equals(id) && e.getValue().failures() != null) {
                    for (final RunSummary.Failure f : e.getValue().failures()) {
                        failures.add(e.getKey().policy.name + " seed " + e.getKey().seed + ": worker " + f.worker() + " died after "
                            + f.roundsDone() + " rounds (" + f.cause() + ")");
                    }
                    for (final RunSummary.Relaunch r : e.getValue().relaunches() == null ? List.<RunSummary.Relaunch>of()
                        : e.getValue().relaunches()) {
                        failures.add(e.getKey().policy.name + " seed " + e.getKey().seed + ": the job went back to round " + r.fromRound()
                            + " (" + r.reason() + ")");
                    }
                }
            }
            if (!failures.isEmpty()) {
                sb.append("<p class=\"note\">Workers that died, and the job going back to its checkpoints (the figures are the "
                    + "survivors', unless a worker was brought back): ").append(esc(String.join("; ", failures))).append(".</p>\n");
            }
            final Map<String, RunSummary> first = new LinkedHashMap<>();
            final Map<String, Path> dirs = new LinkedHashMap<>();
            for (final Map.Entry<ExperimentRunner.Run, RunSummary> e : runs.entrySet()) {
                final ExperimentRunner.Run run = e.getKey();
                if (run.scenario.equals(id) && run.seed == spec.seeds.get(0)) {
                    first.put(run.policy.name, e.getValue());
                    dirs.put(run.policy.name, run.dir);
                }
            }
            final Charts c = new Charts(sb, charts, ExperimentRunner.slug(id));
            if (spec.mode.equals("train")) {
                trainCharts(c, first, dirs, spec);
            } else {
                simCharts(c, sc.policies());
            }
        }
        predictions(new Charts(sb, charts, "all"), runs);
        sb.append("<h2>Experiment file</h2>\n<pre>").append(esc(spec.text)).append("</pre>\n");
        sb.append("<p class=\"note\">Every run's records and summary are under <code>runs/SCENARIO/POLICY/seed-N</code>; all runs in "
            + "<code>summary.csv</code>, per scenario and policy the statistics in <code>scenarios.csv</code> and <code>summary.json</code>; "
            + "each chart as its own SVG file under <code>charts/</code>.</p>\n</body></html>\n");
        return sb.toString();
    }

    /**
     * Which clock made the training runs' times: a modelled device (and how many runs held to it, naming
     * those that did not), or the host's.
     */
    static String clockNote(final ExperimentSpec spec, final Map<ExperimentRunner.Run, RunSummary> runs) {
        if (!spec.training.device().modelled()) {
            return "Clock: this host's (no device modelled, stepTime 0): the times are this host's, not a cluster's.";
        }
        if (spec.virtual) {
            return "Clock: virtual time, every worker in one process: a step of " + spec.training.device() + " for a batch of "
                + spec.training.batch() + " images, " + (spec.training.link().modelled() ? "a modelled link of " + spec.training.link()
                : "communication only a switch hop (no link modelled)") + "; the times are the modelled cluster's, exactly, and the "
                + "host's own work takes none of them.";
        }
        final List<String> unfaithful = new ArrayList<>();
        for (final Map.Entry<ExperimentRunner.Run, RunSummary> e : runs.entrySet()) {
            if (!ExperimentRow.clockOf(e.getValue()).equals("modelled")) {
                final RunSummary.Fidelity f = e.getValue().fidelity();
                unfaithful.add(e.getKey().scenario + " " + e.getKey().policy.name + " seed " + e.getKey().seed
                    + (f == null ? "" : " (" + f.verdict() + ")"));
            }
        }
        return "Clock: a modelled device, a step of " + spec.training.device() + " for a batch of " + spec.training.batch()
            + " images (communication on this host's clock); " + (runs.size() - unfaithful.size()) + " of " + runs.size()
            + " runs faithful to it" + (unfaithful.isEmpty() ? "." : "; not faithful, so not a cluster's times: "
            + String.join("; ", unfaithful) + ".");
    }

    /**
     * An auto policy's predictions against what followed: per decision of every run, the round time
     * its model predicted for the config it chose and the round time measured after the change.
     */
    private static void predictions(final Charts c, final Map<ExperimentRunner.Run, RunSummary> runs) {
        final Map<String, List<double[]>> byPolicy = new LinkedHashMap<>();
        for (final Map.Entry<ExperimentRunner.Run, RunSummary> e : runs.entrySet()) {
            for (final RunSummary.ModeSwitch sw : e.getValue().switches() == null ? List.<RunSummary.ModeSwitch>of() : e.getValue().switches()) {
                if (sw.predictedRoundMs() != null && sw.measuredRoundMs() != null) {
                    byPolicy.computeIfAbsent(e.getKey().policy.name, k -> new ArrayList<>())
                        .add(new double[] {sw.predictedRoundMs(), sw.measuredRoundMs()});
                }
            }
        }
        if (byPolicy.isEmpty()) {
            return;
        }
        final List<SvgChart.Series> series = new ArrayList<>();
        byPolicy.forEach((name, points) -> series.add(new SvgChart.Series(name, points)));
        c.sb().append("<h2>Predicted against measured</h2>\n<p class=\"note\">Each point a config change an auto policy made, in "
            + "every run: the round time its model predicted for the config it chose, and the mean round time measured over the rounds "
            + "after the change (docs/policy.md, \"auto\").</p>\n");
        c.add("predictions", "Round time: predicted against measured (ms)",
            SvgChart.scatter("predicted round time (ms)", "measured round time (ms)", series));
    }

    @SuppressWarnings("unchecked")
    private static void table(final StringBuilder sb, final Map<String, ExperimentResult.PolicyStats> policies, final String baseline,
                              final ExperimentSpec spec) {
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
        policies.forEach((name, st) -> {
            sb.append("<tr><td>").append(esc(name)).append("</td>").append(cell(st.jctSeconds(), 2));
            if (train) {
                sb.append(cell(st.ttaSeconds(), 2));
            }
            sb.append(cell(st.cumulativeWaitingSeconds(), 1)).append(cell(st.computeShare(), 3));
            if (train) {
                sb.append(cell(st.finalAccuracy(), 4));
            }
            if (baseline != null) {
                sb.append("<td>").append(ratio(st.speedupVsBsp())).append(p(st.speedupWelchP())).append(paired(st.pairedSpeedup()))
                    .append("</td>");
                if (train) {
                    sb.append("<td>").append(ratio(st.ttaSpeedupVsBsp())).append(p(st.ttaSpeedupWelchP()))
                        .append(paired(st.pairedTtaSpeedup())).append("</td><td>")
                        .append(st.accuracyDeltaPp() == null ? "-" : signed(st.accuracyDeltaPp()))
                        .append(p(st.accuracyWelchP())).append("</td>");
                }
            }
            sb.append("<td>").append(fmt(st.modeSwitches(), 1)).append("</td><td>").append(st.seeds()).append("</td></tr>\n");
        });
        sb.append("</table>\n<p class=\"note\">mean &plusmn; sample standard deviation over seeds [95% t-interval of the mean]; against "
            + "the baseline, Welch's two-sided p-value for the means differing (p &lt; 0.05: the difference is unlikely to be noise "
            + "across seeds), and the speed-up paired by seed (the geometric mean of each seed's ratio, the runs of a seed made one "
            + "after another) with its 95% interval: an interval above 1 is a gain this host's drift does not explain; a time to "
            + "accuracy only where every seed reached the target.</p>\n");
    }

    private static String cell(final ExperimentResult.Metric m, final int digits) {
        if (m == null || m.mean() == null) {
            return "<td>-</td>";
        }
        final List<Double> ci = m.ci95();
        return "<td>" + fmt(m.mean(), digits) + " &plusmn; " + fmt(m.std(), digits)
            + (ci == null ? "" : " <span class=\"ci\">[" + fmt(ci.get(0), digits) + ", " + fmt(ci.get(1), digits) + "]</span>") + "</td>";
    }

    /** Where a scenario's charts go: inline in the report, and each to its own file {@code charts/SCENARIO-NAME.svg}. */
    private record Charts(StringBuilder sb, Map<String, String> files, String scenario) {
        void add(final String name, final String title, final String svg) {
            final String file = scenario + "-" + name + ".svg";
            files.put(file, svg);
            sb.append("<h3>").append(esc(title)).append(" <a class=\"svg\" href=\"charts/").append(esc(file)).append("\">svg</a></h3>\n")
                .append(svg);
        }
    }

    private static void trainCharts(final Charts c, final Map<String, RunSummary> first, final Map<String, Path> dirs,
                                    final ExperimentSpec spec) throws IOException {
        final StringBuilder sb = c.sb();
        final List<SvgChart.Series> accuracy = new ArrayList<>();
        final List<double[]> marks = new ArrayList<>();
        final List<String> markLabels = new ArrayList<>();
        int colorIndex = 0;
        final Map<String, Integer> colors = new LinkedHashMap<>();
        final Map<String, List<RoundRecord>> records = new LinkedHashMap<>();
        for (final Map.Entry<String, Path> e : dirs.entrySet()) {
            records.put(e.getKey(), readRecords(e.getValue()));
        }
        for (final Map.Entry<String, RunSummary> e : first.entrySet()) {
            colors.put(e.getKey(), colorIndex++);
            final List<double[]> points = new ArrayList<>();
            for (final RunSummary.CurvePoint p : e.getValue().accuracyCurve()) {
                points.add(new double[] {p.seconds(), p.accuracy()});
            }
            accuracy.add(new SvgChart.Series(e.getKey(), points));
            final List<RunSummary.ModeSwitch> switches = e.getValue().switches();
            if (switches != null && !switches.isEmpty()) {
                final Map<Integer, Double> roundTimes = roundTimes(records.get(e.getKey()));
                for (final RunSummary.ModeSwitch sw : switches) {
                    final Double t = roundTimes.get(sw.round());
                    if (t != null) {
                        marks.add(new double[] {t, colors.get(e.getKey())});
                        markLabels.add(e.getKey() + ": round " + sw.round() + " " + sw.from() + " -> " + sw.to());
                    }
                }
            }
        }
        c.add("accuracy", "Test accuracy against time",
            SvgChart.line("time since training started (s)", "test accuracy", accuracy, marks, spec.targetAccuracy, true));
        if (!markLabels.isEmpty()) {
            sb.append("<p class=\"note\">dashed lines: mode switches (first round in force) &mdash; ")
                .append(esc(String.join("; ", markLabels))).append("</p>\n");
        }
        // cumulative waiting per worker
        final List<String> names = new ArrayList<>(first.keySet());
        int workers = 0;
        for (final RunSummary s : first.values()) {
            workers = Math.max(workers, s.waitingSecondsPerWorker().size());
        }
        final double[][] waiting = new double[names.size()][workers];
        for (int p = 0; p < names.size(); p++) {
            final List<Double> w = first.get(names.get(p)).waitingSecondsPerWorker();
            for (int i = 0; i < w.size(); i++) {
                waiting[p][i] = w.get(i);
            }
        }
        final List<String> groups = new ArrayList<>();
        for (int i = 0; i < workers; i++) {
            groups.add("worker " + i);
        }
        c.add("waiting", "Cumulative waiting per worker (s)", SvgChart.bars("waiting (s)", groups, names, waiting, null));
        // staleness histogram
        int maxStale = 0;
        for (final RunSummary s : first.values()) {
            maxStale = Math.max(maxStale, s.staleness().max());
        }
        final double[][] stale = new double[names.size()][maxStale + 1];
        for (int p = 0; p < names.size(); p++) {
            final Map<String, Integer> h = first.get(names.get(p)).staleness().histogram();
            for (int k = 0; k <= maxStale; k++) {
                stale[p][k] = h.getOrDefault(String.valueOf(k), 0);
            }
        }
        final List<String> staleGroups = new ArrayList<>();
        for (int k = 0; k <= maxStale; k++) {
            staleGroups.add(String.valueOf(k));
        }
        c.add("staleness", "Staleness histogram: worker-rounds whose gradient was computed with k earlier aggregates missing",
            SvgChart.bars("worker-rounds", staleGroups, names, stale, null));
        // timeline of the first rounds
        sb.append("<p class=\"note\">Round timelines, first 30 rounds: blue compute, orange injected straggling, grey waiting and "
            + "applying.</p>\n");
        for (int p = 0; p < names.size(); p++) {
            c.add("timeline-" + p, "Round timeline: " + names.get(p), timeline(records.get(names.get(p)), 30));
        }
    }

    private static void simCharts(final Charts c, final Map<String, ExperimentResult.PolicyStats> policies) {
        final List<String> names = new ArrayList<>(policies.keySet());
        final double[][] jct = new double[names.size()][1];
        final double[][] waiting = new double[names.size()][1];
        final double[][][] jctCi = new double[names.size()][1][];
        final double[][][] waitingCi = new double[names.size()][1][];
        for (int p = 0; p < names.size(); p++) {
            final ExperimentResult.PolicyStats st = policies.get(names.get(p));
            jct[p][0] = orZero(st.jctSeconds().mean());
            waiting[p][0] = orZero(st.cumulativeWaitingSeconds().mean());
            jctCi[p][0] = interval(st.jctSeconds());
            waitingCi[p][0] = interval(st.cumulativeWaitingSeconds());
        }
        c.add("jct", "JCT (virtual s), mean over seeds with its 95% interval",
            SvgChart.bars("JCT (s)", List.of("mean over seeds"), names, jct, jctCi));
        c.add("waiting", "Cumulative waiting (virtual s), mean over seeds with its 95% interval",
            SvgChart.bars("waiting (s)", List.of("mean over seeds"), names, waiting, waitingCi));
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
        final List<Double> ticks = SvgChart.ticks(0, Math.max(1e-3, t1 - t0), 6);
        final double span = ticks.get(ticks.size() - 1);
        final double plotW = W - LEFT - 20;
        final double y0 = TOP + workers * rowH;
        final StringBuilder s = new StringBuilder();
        s.append(String.format(Locale.ROOT, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            + "font-family=\"sans-serif\"><rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>", W, height, W, height));
        for (final double t : ticks) {
            final double x = LEFT + t / span * plotW;
            s.append(String.format(Locale.ROOT, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
                + "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>", x, TOP, x, y0, x, y0 + 16,
                SvgChart.tickLabel(t, ticks)));
        }
        s.append(String.format(Locale.ROOT, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">time since the first "
            + "round started (s)</text>", LEFT + plotW / 2, y0 + 38));
        for (final RoundRecord n : lines) {
            final int w = n.worker();
            final double start = n.startSeconds() - t0;
            final double send = n.sendSeconds() - t0;
            final double injected = n.injectedSeconds();
            final double compute = n.computeSeconds();
            final double computeStart = Math.max(start, send - injected - compute);
            final double y = TOP + w * rowH;
            rect(s, LEFT + start / span * plotW, y, (computeStart - start) / span * plotW, rowH - 4, "#bbbbbb");
            rect(s, LEFT + computeStart / span * plotW, y, compute / span * plotW, rowH - 4, SvgChart.COLORS[0]);
            rect(s, LEFT + (send - injected) / span * plotW, y, injected / span * plotW, rowH - 4, SvgChart.COLORS[3]);
        }
        for (int w = 0; w < workers; w++) {
            s.append(String.format(Locale.ROOT, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">worker %d</text>", LEFT - 4,
                TOP + w * rowH + 11, w));
        }
        return s.append("</svg>\n").toString();
    }

    private static void rect(final StringBuilder s, final double x, final double y, final double w, final double h, final String color) {
        if (w > 0) {
            s.append(String.format(Locale.ROOT, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"/>", x, y,
                Math.max(w, 0.5), h, color));
        }
    }

    private static double orZero(final Double v) {
        return v == null ? 0 : v;
    }

    private static String ratio(final Double v) {
        return v == null ? "-" : fmt(v, 2) + "x";
    }

    private static String paired(final List<Double> v) {
        return v == null ? "" : " <span class=\"ci\">paired " + fmt(v.get(0), 2) + "x [" + fmt(v.get(1), 2) + ", " + fmt(v.get(2), 2)
            + "]</span>";
    }

    private static String p(final Double v) {
        return v == null ? "" : " <span class=\"p\">p=" + (v < 0.001 ? "&lt;0.001" : fmt(v, 3)) + "</span>";
    }

    private static double[] interval(final ExperimentResult.Metric m) {
        return m.ci95() == null ? null : new double[] {m.ci95().get(0), m.ci95().get(1)};
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
