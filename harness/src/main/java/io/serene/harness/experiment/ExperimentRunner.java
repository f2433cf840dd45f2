package io.serene.harness.experiment;

import io.serene.launch.RunSettings;
import io.serene.launch.RunSummary;
import io.serene.launch.DdpBaseline;
import io.serene.launch.TrainRun;
import io.serene.sim.Scenario;
import io.serene.sim.ScenarioResult;
import io.serene.sim.ScenarioRunner;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.Json;
import io.serene.training.ModelKind;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Runs an experiment's matrix (workers x stragglers = scenarios; x policies x seeds = runs), each run
 * into {@code out/runs/SCENARIO/POLICY/seed-N} ({@code serene train}'s records and summary, or the
 * simulator's summary). A run whose summary.json exists is not run again, so an interrupted
 * experiment resumes where it stopped. Then writes summary.csv, summary.json and report.html.
 */
public final class ExperimentRunner {
    /** One cell of the matrix. */
    static final class Run {
        final String scenario;
        final ModelKind model;
        final int workers;
        final String stragglers;
        final PolicyRef policy;
        final long seed;
        final Path dir;

        Run(final String scenario, final ModelKind model, final int workers, final String stragglers,
            final PolicyRef policy, final long seed, final Path dir) {
            this.scenario = scenario;
            this.model = model;
            this.workers = workers;
            this.stragglers = stragglers;
            this.policy = policy;
            this.seed = seed;
            this.dir = dir;
        }

        @Override
        public String toString() {
            return scenario + " " + policy.name + " seed " + seed;
        }
    }


    private final ExperimentSpec spec;
    private final Path out;
    private final PrintStream console;
    private int executed;

    public ExperimentRunner(final ExperimentSpec spec, final Path out, final PrintStream console) {
        this.spec = spec;
        this.out = out;
        this.console = console;
    }

    /** Runs actually executed by the last {@link #run} (the others were already done). */
    public int executed() {
        return executed;
    }

    /** The matrix, in the order it runs: scenario by scenario, seed by seed, every policy. */
    public List<Run> matrix() {
        final List<Run> runs = new ArrayList<>();
        final boolean train = spec.mode.equals("train");
        for (final ModelKind model : train ? spec.models : List.of(ModelKind.MLP)) {
            for (final int workers : spec.workers) {
                for (final String stragglers : spec.stragglers) {
                    final String scenario = (train ? model + "-" : "") + "w" + workers + "-" + slug(stragglers);
                    // every policy for one seed, then the next seed: the machine's drift over the
                    // scenario's runs falls on every policy alike, not on the policies run last
                    for (final long seed : spec.seeds) {
                        for (final PolicyRef policy : spec.policies) {
                            runs.add(new Run(scenario, model, workers, stragglers, policy, seed,
                                out.resolve("runs").resolve(scenario).resolve(slug(policy.name)).resolve("seed-" + seed)));
                        }
                    }
                }
            }
        }
        return runs;
    }

    /** Runs what is not done yet, then writes the summaries and the report; returns summary.json's content. */
    public ExperimentResult run(final boolean quick) throws Exception {
        Files.createDirectories(out);
        Files.writeString(out.resolve("experiment.yaml"), spec.text, StandardCharsets.UTF_8);
        final List<Run> runs = matrix();
        for (final Run run : runs) {
            checkKept(run);
        }
        final long start = System.nanoTime();
        executed = 0;
        for (int i = 0; i < runs.size(); i++) {
            final Run run = runs.get(i);
            final String tag = String.format(Locale.ROOT, "[%d/%d] %s", i + 1, runs.size(), run);
            if (Files.isRegularFile(run.dir.resolve("summary.json"))) {
                console.println(tag + ": done before, kept");
                continue;
            }
            console.println(tag + ": running ...");
            console.flush();
            final long t0 = System.nanoTime();
            final ExperimentRow row = spec.mode.equals("train") ? ExperimentRow.of(run, train(run)) : ExperimentRow.of(run, sim(run));
            executed++;
            console.printf(Locale.ROOT, "%s: JCT %.2f s%s, waiting %.1f s, %s clock (%.0f s for this run, %.0f s so far)%n", tag,
                row.jctSeconds(), row.finalAccuracy() == null ? "" : String.format(Locale.ROOT, ", accuracy %.4f", row.finalAccuracy()),
                row.cumulativeWaitingSeconds(), row.clock().equals("modelled-not-faithful") ? "modelled, NOT faithful,"
                    : row.clock(), (System.nanoTime() - t0) / 1e9, (System.nanoTime() - start) / 1e9);
            console.flush();
        }
        final List<ExperimentRow> rows = new ArrayList<>();
        final Map<Run, RunSummary> summaries = new LinkedHashMap<>();
        for (final Run run : runs) {
            final String text = Files.readString(run.dir.resolve("summary.json"), StandardCharsets.UTF_8);
            if (spec.mode.equals("train")) {
                final RunSummary s = Json.read(text, RunSummary.class);
                summaries.put(run, s);
                rows.add(ExperimentRow.of(run, s));
            } else {
                rows.add(ExperimentRow.of(run, Json.read(text, SimRunSummary.class)));
            }
        }
        final ExperimentResult aggregate = ExperimentSummary.aggregate(spec, rows, quick);
        ExperimentRow.writeCsv(out.resolve("summary.csv"), rows);
        ExperimentSummary.writeScenarioCsv(out.resolve("scenarios.csv"), aggregate);
        Files.writeString(out.resolve("summary.json"), Json.write(aggregate) + "\n", StandardCharsets.UTF_8);
        final Map<String, String> charts = new LinkedHashMap<>();
        Files.writeString(out.resolve("report.html"), ReportWriter.html(spec, aggregate, summaries, quick, charts), StandardCharsets.UTF_8);
        Files.createDirectories(out.resolve("charts"));
        for (final Map.Entry<String, String> c : charts.entrySet()) {
            Files.writeString(out.resolve("charts").resolve(c.getKey()), "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + c.getValue(),
                StandardCharsets.UTF_8);
        }
        return aggregate;
    }

    /** Settings runs did not record before they existed, and the value they were made with. */
    private static final Map<String, String> SINCE_ADDED = Map.of("stepTime", "0", "linkRate", "0", "linkDelay", "0", "clock", "wall");

    /**
     * A run kept from an earlier invocation must have been made with the file's settings, or its
     * numbers would sit in the tables beside runs made another way: an error naming the setting.
     */
    private void checkKept(final Run run) throws IOException {
        final Path summary = run.dir.resolve("summary.json");
        if (!spec.mode.equals("train") || !Files.isRegularFile(summary)) {
            return;
        }
        final Map<String, Object> made = Json.read(Files.readString(summary, StandardCharsets.UTF_8), RunSummary.class).run();
        if (made == null) {
            return;
        }
        for (final Map.Entry<String, Object> e : settings(run).trainingSummary().entrySet()) {
            // a run made before a setting existed was made with its default
            final Object value = made.getOrDefault(e.getKey(), SINCE_ADDED.get(e.getKey()));
            if (value != null && !String.valueOf(value).equals(String.valueOf(e.getValue()))) {
                throw new IllegalArgumentException(run.dir + " was run with " + e.getKey() + " " + value + ", the file says "
                    + e.getValue() + ": use another --out, or delete that run to run it again");
            }
        }
    }

    private RunSummary train(final Run run) throws Exception {
        if (run.policy.isDdp()) {
            return new DdpBaseline(settings(run), DdpBaseline.PYTHON, run.policy.hookSyncFor(run.workers)).run();
        }
        return new TrainRun(settings(run), console).run();
    }

    /** What serene train runs for one run of the matrix. */
    private RunSettings settings(final Run run) {
        final RunSettings.Builder b = RunSettings.builder().workers(run.workers)
            .training(spec.training.toBuilder().model(run.model).stragglers(run.stragglers).seed(run.seed).data(dataDir).build())
            .workerJit(spec.workerJit).targetAccuracy(spec.targetAccuracy).out(run.dir).faults(spec.faults).shm(spec.shm).virtual(spec.virtual)
            .pytorch(run.policy.isDdp() ? null : spec.pytorch).quiet(true);
        if (run.policy.policy != null) {
            b.policy(run.policy.policy, run.policy.name);
        } else {
            b.sync(run.policy.syncFor(run.workers));
        }
        return b.build();
    }

    private Path dataDir;

    /** The dataset directory for train runs (null: Debian's). */
    public ExperimentRunner data(final Path dir) {
        this.dataDir = dir;
        return this;
    }

    private SimRunSummary sim(final Run run) throws IOException {
        final Scenario scenario = new Scenario().workers(run.workers).rounds(spec.training.rounds()).stragglers(run.stragglers).seed(run.seed)
            .computeNs((long) (spec.computeMs * 1_000_000L));
        if (run.policy.policy != null) {
            scenario.policy(run.policy.policy);
        } else {
            scenario.schedule(SyncSchedule.parse(run.policy.syncFor(run.workers)));
        }
        final ScenarioResult r = new ScenarioRunner(scenario).run();
        if (!r.allChecks()) {
            throw new IllegalStateException(run + ": the simulation failed its invariant checks: " + Json.write(r.toJson()));
        }
        final Map<String, Object> sim = r.toJson();
        @SuppressWarnings("unchecked") final List<Object> switches = (List<Object>) sim.get("switches");
        final SimRunSummary s = new SimRunSummary(Json.SCHEMA_VERSION, r.jctNs / 1e9, r.cumulativeWaitingNs / 1e9, r.computeShare,
            new SimRunSummary.Staleness(r.maxStaleness, r.meanStaleness), ((Number) sim.get("modeSwitches")).intValue(), switches,
            r.allChecks(), sim, run.seed);
        Files.createDirectories(run.dir);
        Files.writeString(run.dir.resolve("summary.json"), Json.write(s) + "\n", StandardCharsets.UTF_8);
        return s;
    }

    /** A string as a directory name. */
    static String slug(final String text) {
        return text.replaceAll("[^A-Za-z0-9_.=-]+", "_");
    }
}
