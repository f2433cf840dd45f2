package io.serene.harness.experiment;

import io.serene.launch.RunSummary;
import io.serene.training.Json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.ToDoubleFunction;
import java.util.stream.Stream;

/**
 * Two experiment outputs side by side, cell by cell (a scenario and a policy), over the seeds both
 * ran: e.g. the same file in virtual time and on the modelled wall clock. A cell agrees when B's
 * time to the target is within {@link #TIME_TOLERANCE} of A's and its final accuracy within
 * {@link #ACCURACY_TOLERANCE_PP} points (both never reaching the target agrees on time).
 */
public final class Comparison {
    /** How far B's time to the target may be from A's, as a share of A's. */
    public static final double TIME_TOLERANCE = 0.10;
    /** How far B's final accuracy may be from A's, in points. */
    public static final double ACCURACY_TOLERANCE_PP = 0.5;

    /** One cell: the seeds compared, means of A and B (a time to target null when a seed never reached it), their clocks. */
    public record Cell(String scenario, String policy, List<Long> seeds, double jctA, double jctB, Double ttaA, Double ttaB, double accuracyA,
                       double accuracyB, String clockA, String clockB) {
        /** Whether B agrees with A on the time to the target and the final accuracy. */
        public boolean agrees() {
            final boolean time = ttaA == null || ttaB == null ? Objects.equals(ttaA, ttaB)
                : Math.abs(ttaB - ttaA) <= TIME_TOLERANCE * ttaA;
            return time && Math.abs(100 * (accuracyB - accuracyA)) <= ACCURACY_TOLERANCE_PP;
        }
    }

    private Comparison() {
    }

    /** The cells of the outputs in directories {@code a} and {@code b} (each an experiment's --out, with its summary.csv). */
    public static List<Cell> of(final Path a, final Path b) throws IOException {
        return of(rows(a), rows(b));
    }

    /**
     * The runs of an experiment's output: its summary.csv, or (an invocation still running, or cut
     * short) the summary.json of every run finished under runs/SCENARIO/POLICY/seed-N (the policy as
     * the run names it: a preset with N resolved, as fastest:3 for fastest:N-1).
     */
    private static List<ExperimentRow> rows(final Path dir) throws IOException {
        final Path csv = dir.resolve("summary.csv");
        if (Files.isRegularFile(csv)) {
            return ExperimentRow.readCsv(csv);
        }
        final Path runs = dir.resolve("runs");
        if (!Files.isDirectory(runs)) {
            throw new IllegalArgumentException(dir + " holds neither summary.csv nor runs/: give the --out directory of a serene experiment");
        }
        final List<ExperimentRow> rows = new ArrayList<>();
        try (Stream<Path> files = Files.find(runs, 4, (p, a) -> p.getFileName().toString().equals("summary.json")
            && p.getParent().getFileName().toString().startsWith("seed-"))) {
            for (final Path f : files.sorted().toList()) {
                final RunSummary s = Json.read(Files.readString(f, StandardCharsets.UTF_8), RunSummary.class);
                final Path seedDir = f.getParent();
                final Map<String, Object> run = s.run();
                rows.add(new ExperimentRow(seedDir.getParent().getParent().getFileName().toString(), String.valueOf(run.get("model")),
                    ((Number) run.get("workers")).intValue(), String.valueOf(run.get("stragglers")),
                    String.valueOf(run.get("policy")), s.seed(), s.jctSeconds(), s.ttaSeconds(), s.cumulativeWaitingSeconds(),
                    s.computeShare(), s.finalAccuracy(), s.modeSwitches(), ExperimentRow.clockOf(s)));
            }
        }
        return rows;
    }

    /** The cells both sets of runs have, in A's order, paired by seed. */
    static List<Cell> of(final List<ExperimentRow> a, final List<ExperimentRow> b) {
        final Map<String, Map<Long, ExperimentRow>> byCellA = byCell(a);
        final Map<String, Map<Long, ExperimentRow>> byCellB = byCell(b);
        final List<Cell> cells = new ArrayList<>();
        for (final Map.Entry<String, Map<Long, ExperimentRow>> e : byCellA.entrySet()) {
            final Map<Long, ExperimentRow> other = byCellB.get(e.getKey());
            if (other == null) {
                continue;
            }
            final Set<Long> seeds = new TreeSet<>(e.getValue().keySet());
            seeds.retainAll(other.keySet());
            if (seeds.isEmpty()) {
                continue;
            }
            final List<ExperimentRow> ra = seeds.stream().map(e.getValue()::get).toList();
            final List<ExperimentRow> rb = seeds.stream().map(other::get).toList();
            cells.add(new Cell(ra.get(0).scenario(), ra.get(0).policy(), List.copyOf(seeds), mean(ra, ExperimentRow::jctSeconds),
                mean(rb, ExperimentRow::jctSeconds), tta(ra), tta(rb), mean(ra, r -> r.finalAccuracy() == null ? Double.NaN : r.finalAccuracy()),
                mean(rb, r -> r.finalAccuracy() == null ? Double.NaN : r.finalAccuracy()), ra.get(0).clock(), rb.get(0).clock()));
        }
        return cells;
    }

    private static Map<String, Map<Long, ExperimentRow>> byCell(final List<ExperimentRow> rows) {
        final Map<String, Map<Long, ExperimentRow>> cells = new LinkedHashMap<>();
        for (final ExperimentRow r : rows) {
            cells.computeIfAbsent(r.scenario() + "\u0000" + r.policy(), k -> new LinkedHashMap<>()).put(r.seed(), r);
        }
        return cells;
    }

    private static double mean(final List<ExperimentRow> rows, final ToDoubleFunction<ExperimentRow> f) {
        return rows.stream().mapToDouble(f).average().orElse(Double.NaN);
    }

    /** The mean time to the target, or null if any seed never reached it. */
    private static Double tta(final List<ExperimentRow> rows) {
        return rows.stream().anyMatch(r -> r.ttaSeconds() == null) ? null : mean(rows, ExperimentRow::ttaSeconds);
    }
}
