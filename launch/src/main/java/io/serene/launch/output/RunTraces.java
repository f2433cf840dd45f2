package io.serene.launch.output;

import com.fasterxml.jackson.annotation.JsonInclude;
import io.serene.training.Json;
import io.serene.training.RoundRecord;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A training run's records as the tools users compare runs with: TensorBoard event files, one
 * directory per worker ({@code tensorboard/worker-N}: loss, accuracy, compute, injected delay,
 * waiting, staleness, batch and the config changes per round, the sync config as text), and a
 * Chrome trace ({@code trace.json}, which Perfetto and chrome://tracing open: per worker its
 * waiting, compute and injected delay as slices, each round in flight from send to release, and
 * an instant event at every config change).
 */
public final class RunTraces {
    /**
     * One event of the Trace Event Format (the members Perfetto and chrome://tracing read; absent
     * ones left out): a complete slice (ph X, with dur), an async begin or end (b, e, with cat and
     * id), an instant (i, with s the scope) or metadata (M).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record TraceEvent(String name, String ph, int pid, int tid, double ts, Double dur, String cat, String id, String s,
                             Map<String, Object> args) {
    }

    /** trace.json: its events, and the unit viewers show. */
    public record Trace(List<TraceEvent> traceEvents, String displayTimeUnit) {
    }

    /** A sync config in force from a round on (the run's start config at round 0). */
    public record SyncChange(int round, String config, String reason) {
    }

    private RunTraces() {
    }

    /**
     * Writes {@code out/tensorboard/worker-N/} and {@code out/trace.json}.
     *
     * @param originSeconds the records' time origin, seconds since 1970 (TensorBoard's wall time)
     */
    public static void write(final Path out, final String run, final List<RoundRecord> rounds, final List<SyncChange> changes,
                             final double originSeconds) throws IOException {
        final List<SyncChange> sorted = new ArrayList<>(changes);
        sorted.sort(Comparator.comparingInt(SyncChange::round));
        tensorBoard(out.resolve("tensorboard"), rounds, sorted, originSeconds);
        Files.writeString(out.resolve("trace.json"), Json.write(trace(run, rounds, sorted)) + "\n", StandardCharsets.UTF_8);
    }

    private static void tensorBoard(final Path dir, final List<RoundRecord> rounds, final List<SyncChange> changes,
                                    final double originSeconds) throws IOException {
        final TreeMap<Integer, List<RoundRecord>> byWorker = new TreeMap<>();
        for (final RoundRecord r : rounds) {
            byWorker.computeIfAbsent(r.worker(), k -> new ArrayList<>()).add(r);
        }
        for (final Map.Entry<Integer, List<RoundRecord>> e : byWorker.entrySet()) {
            final List<RoundRecord> list = new ArrayList<>(e.getValue());
            list.sort(Comparator.comparingInt(RoundRecord::round));
            try (TensorBoardWriter tb = new TensorBoardWriter(dir.resolve("worker-" + e.getKey()),
                originSeconds + (list.isEmpty() ? 0 : list.get(0).startSeconds()))) {
                int next = 0;
                int switches = 0;
                for (final RoundRecord r : list) {
                    final double wall = originSeconds + r.startSeconds();
                    while (next < changes.size() && changes.get(next).round() <= r.round()) {
                        final SyncChange c = changes.get(next++);
                        switches += c.round() > 0 ? 1 : 0;
                        tb.text("sync/config", r.round(), wall, c.config() + (c.reason() == null ? "" : " (" + c.reason() + ")"));
                    }
                    if (r.loss() != null) {
                        tb.scalar("loss", r.round(), wall, r.loss());
                    }
                    if (r.accuracy() != null) {
                        tb.scalar("accuracy", r.round(), originSeconds + r.evaluatedSeconds(), r.accuracy());
                    }
                    tb.scalar("time/compute_seconds", r.round(), wall, r.computeSeconds());
                    tb.scalar("time/injected_seconds", r.round(), wall, r.injectedSeconds());
                    tb.scalar("time/waiting_seconds", r.round(), wall, r.waitingSeconds());
                    tb.scalar("staleness", r.round(), wall, r.staleness());
                    tb.scalar("batch", r.round(), wall, r.batch());
                    tb.scalar("sync/changes", r.round(), wall, switches);
                }
            }
        }
    }

    /** The Trace Event Format: microseconds from the run's first round start; pid 1, one thread per worker. */
    static Trace trace(final String run, final List<RoundRecord> rounds, final List<SyncChange> changes) {
        final double t0 = rounds.stream().mapToDouble(RoundRecord::startSeconds).min().orElse(0);
        final List<TraceEvent> events = new ArrayList<>();
        events.add(new TraceEvent("process_name", "M", 1, 0, 0, null, null, null, null, Map.of("name", "serene " + run)));
        final TreeMap<Integer, Double> roundStarts = new TreeMap<>();
        final TreeSet<Integer> workers = new TreeSet<>();
        for (final RoundRecord r : rounds) {
            workers.add(r.worker());
            roundStarts.merge(r.round(), r.startSeconds(), Math::min);
            final double start = r.startSeconds() - t0;
            final double send = r.sendSeconds() - t0;
            final double computeStart = Math.max(start, send - r.injectedSeconds() - r.computeSeconds());
            final Map<String, Object> args = Map.of("round", r.round(), "staleness", r.staleness(), "batch", r.batch());
            slice(events, "waiting", r.worker(), start, computeStart - start, args);
            if (!r.skipped()) {
                slice(events, "compute", r.worker(), computeStart, r.computeSeconds(), args);
                slice(events, "injected delay", r.worker(), send - r.injectedSeconds(), r.injectedSeconds(), args);
                if (r.releaseSeconds() >= r.sendSeconds()) {
                    final String id = r.worker() + "." + r.round();
                    final String name = "round " + r.round() + " in flight";
                    events.add(new TraceEvent(name, "b", 1, r.worker(), send * 1e6, null, "allreduce", id, null, Map.of()));
                    events.add(new TraceEvent(name, "e", 1, r.worker(), (r.releaseSeconds() - t0) * 1e6, null, "allreduce", id, null,
                        Map.of()));
                }
            }
        }
        for (final int w : workers) {
            events.add(new TraceEvent("thread_name", "M", 1, w, 0, null, null, null, null, Map.of("name", "worker " + w)));
        }
        for (final SyncChange c : changes) {
            final Double at = roundStarts.get(c.round());
            if (c.round() > 0 && at != null) {
                events.add(new TraceEvent("sync: " + c.config(), "i", 1, 0, (at - t0) * 1e6, null, null, null, "g",
                    c.reason() == null ? Map.of("round", c.round()) : Map.of("round", c.round(), "reason", c.reason())));
            }
        }
        return new Trace(events, "ms");
    }

    private static void slice(final List<TraceEvent> events, final String name, final int worker, final double startSeconds,
                              final double seconds, final Map<String, Object> args) {
        if (seconds > 0) {
            events.add(new TraceEvent(name, "X", 1, worker, startSeconds * 1e6, seconds * 1e6, null, null, null, args));
        }
    }
}
