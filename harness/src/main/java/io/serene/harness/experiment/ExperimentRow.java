package io.serene.harness.experiment;

import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.MappingIterator;
import com.fasterxml.jackson.dataformat.csv.CsvMapper;
import com.fasterxml.jackson.dataformat.csv.CsvSchema;
import io.serene.launch.RunSummary;

import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * One run of an experiment: a row of {@code summary.csv} and an element of {@code summary.json}'s
 * {@code runs}, written and read as this type. A time to accuracy is null when the run never
 * reached the target; in sim mode accuracy and time to accuracy are null. {@code clock} says which
 * clock made the times: {@code modelled} (a modelled device, and the run was faithful to it),
 * {@code modelled-not-faithful}, {@code host} (this host's time, no device modelled) or {@code virtual} (virtual time: serene sim, or clock: virtual).
 */
public record ExperimentRow(String scenario, String model, int workers, String stragglers, String policy, long seed, double jctSeconds,
                            Double ttaSeconds, double cumulativeWaitingSeconds, double computeShare, Double finalAccuracy,
                            int modeSwitches, String clock) {
    /** Columns in the record's order (CsvMapper would sort them). */
    private static final CsvMapper CSV = CsvMapper.builder().disable(MapperFeature.SORT_PROPERTIES_ALPHABETICALLY).build();
    private static final CsvSchema SCHEMA = CSV.schemaFor(ExperimentRow.class).withHeader().withNullValue("");

    /** A training run's row. */
    static ExperimentRow of(final ExperimentRunner.Run run, final RunSummary s) {
        return new ExperimentRow(run.scenario, run.model.toString(), run.workers, run.stragglers, run.policy.name, run.seed, s.jctSeconds(),
            s.ttaSeconds(), s.cumulativeWaitingSeconds(), s.computeShare(), s.finalAccuracy(), s.modeSwitches(), clockOf(s));
    }

    /** A simulated run's row (no accuracy). */
    static ExperimentRow of(final ExperimentRunner.Run run, final SimRunSummary s) {
        return new ExperimentRow(run.scenario, run.model == null ? null : run.model.toString(), run.workers, run.stragglers, run.policy.name,
            run.seed, s.jctSeconds(), null, s.cumulativeWaitingSeconds(), s.computeShare(), null, s.modeSwitches(), "virtual");
    }

    /**
     * The clock that made a training run's times: virtual, modelled (and whether faithful), or host (a
     * summary written before verdicts existed: the host's).
     */
    static String clockOf(final RunSummary s) {
        final RunSummary.Fidelity f = s.fidelity();
        if (f != null && f.clock().equals("virtual")) {
            return "virtual";
        }
        if (f == null || !f.clock().equals("modelled")) {
            return "host";
        }
        return f.faithful() ? "modelled" : "modelled-not-faithful";
    }

    /** Writes the rows as CSV with a header (RFC 4180 quoting: commas, quotes and line breaks stay in their cell). */
    static void writeCsv(final Path file, final List<ExperimentRow> rows) throws IOException {
        try (Writer out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            CSV.writer(SCHEMA).writeValues(out).writeAll(rows).close();
        }
    }

    /** Reads a {@code summary.csv} back. */
    static List<ExperimentRow> readCsv(final Path file) throws IOException {
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8);
             MappingIterator<ExperimentRow> it = CSV.readerFor(ExperimentRow.class).with(SCHEMA).readValues(in)) {
            return it.readAll();
        }
    }
}
