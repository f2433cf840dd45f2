package io.serene.harness.cli;

import io.serene.training.Json;
import io.serene.harness.experiment.ExperimentResult;
import io.serene.harness.experiment.ExperimentRunner;
import io.serene.harness.experiment.ExperimentSpec;
import io.serene.harness.experiment.ReportWriter;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code serene experiment}: runs an experiment file's matrix and writes its summaries and report. */
@Command(name = "experiment", mixinStandardHelpOptions = true,
    description = {"Runs an experiment file (YAML; see experiments/paper.yaml): every scenario (workers x stragglers) under every "
        + "policy and seed, in real training (mode: train) or in virtual time (mode: sim). Resumable: runs already in DIR are kept.",
        "Writes DIR/runs/SCENARIO/POLICY/seed-N (records and summary of each run), DIR/summary.csv, DIR/summary.json and "
            + "DIR/report.html (charts, tables; opens without a network)."})
public final class ExperimentCommand implements Callable<Integer> {
    @Parameters(paramLabel = "FILE", description = "The experiment file.")
    Path file;

    @Option(names = "--quick", description = "Apply the file's 'quick' overrides (a reduced matrix).")
    boolean quick;

    @Option(names = "--out", description = "Output directory. Default: runs/<experiment name>[-quick].")
    Path out;

    @Option(names = "--data", description = "Fashion-MNIST directory for train runs. Default: /usr/share/datasets/fashion-mnist.")
    Path data;

    @Option(names = "--seeds", split = ",", paramLabel = "SEED",
        description = "Run these seeds instead of the file's (after --quick), e.g. --seeds 1,2,3.")
    List<Integer> seeds;

    @Option(names = "--set", paramLabel = "KEY=VALUE", description = "Replace a key of the file (after --quick and --seeds), the "
        + "value in YAML, e.g. --set model=[mlp] --set workers=[8]: a slice of a matrix. Recorded in the output's copy of the file.")
    Map<String, String> sets = new LinkedHashMap<>();

    @Option(names = "--json", description = "End with one JSON line: per policy its speed-up against BSP and accuracy difference.")
    boolean json;

    @Override
    public Integer call() throws Exception {
        final ExperimentSpec spec = ExperimentSpec.read(file, quick, seeds, sets);
        final Path dir = out != null ? out : Path.of("runs", spec.name + (quick ? "-quick" : ""));
        if (spec.mode.equals("train") && data == null) {
            DemoCommand.ensureDataset(System.out);
        }
        final ExperimentRunner runner = new ExperimentRunner(spec, dir, System.out).data(data);
        System.out.printf(Locale.ROOT, "experiment %s (%s%s): %d runs into %s%n", spec.name, spec.mode, quick ? ", quick" : "",
            runner.matrix().size(), dir);
        final ExperimentResult summary = runner.run(quick);
        final Map<String, ExperimentResult.Across> policies = summary.policies();
        System.out.printf(Locale.ROOT, "%-14s %10s %10s %12s %10s %12s%n", "policy", "JCT (s)", "speed-up", "TTA speed-up", "accuracy",
            "vs BSP (pp)");
        policies.forEach((name, p) -> System.out.printf(Locale.ROOT, "%-14s %10s %10s %12s %10s %12s%n", name,
            ReportWriter.fmt(p.jctSeconds(), 2), ratio(p.speedupVsBsp()), ratio(p.ttaSpeedupVsBsp()), ReportWriter.fmt(p.finalAccuracy(), 4),
            ReportWriter.fmt(p.accuracyDeltaPp(), 2)));
        System.out.println("report: " + dir.resolve("report.html") + " (" + runner.executed() + " runs executed, the rest kept)");
        if (json) {
            final Map<String, Object> line = new LinkedHashMap<>();
            line.put("experiment", spec.name);
            line.put("quick", quick);
            line.put("report", dir.resolve("report.html").toString());
            line.put("seeds", spec.seeds);
            line.putAll(policies);
            line.put("policies", List.copyOf(policies.keySet()));
            System.out.println(Json.write(line));
        }
        return 0;
    }

    private static String ratio(final Double v) {
        return v == null ? "-" : String.format(Locale.ROOT, "%.2fx", v);
    }
}
