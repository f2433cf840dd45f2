package io.serene.harness.launch;

import io.serene.training.RoundRecord;
import io.serene.training.WorkerResult;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The summary of a training run, computed from the workers' per-round records and their result
 * lines (all times on the run's shared axis, in seconds):
 * <ul>
 *   <li>JCT: from the first worker's start of training to the last worker's end;</li>
 *   <li>time to accuracy: the first evaluated round at which the workers' mean test accuracy reaches
 *       the target, at the time the last of them held the evaluated model (with deferred evaluation,
 *       when it copied the model; otherwise when it evaluated it) (null if never);</li>
 *   <li>cumulative waiting: the time workers were blocked (clearance and aggregates), summed;</li>
 *   <li>compute share: compute (measured and injected) over the workers' wall time;</li>
 *   <li>per round and worker, on average: compute, injected, communication (from the round's last
 *       gradient sent to its aggregate's arrival, within the blocked time), waiting for peers (the
 *       rest of the blocked time), test-set evaluation (after training, off the clock, when deferred)
 *       and other work (batching, applying).</li>
 * </ul>
 */
final class TrainSummary {
    private TrainSummary() {
    }

    /** The summary's measured members, in a fixed order (the caller adds the run's settings). */
    static Map<String, Object> of(final List<RoundRecord> rounds, final List<WorkerResult> results, final double targetAccuracy) {
        if (results.isEmpty()) {
            throw new IllegalArgumentException("no worker results to summarize");
        }
        final List<WorkerResult> byWorker = new ArrayList<>(results);
        byWorker.sort(Comparator.comparingInt(WorkerResult::worker));
        final double t0 = byWorker.stream().mapToDouble(r -> r.startSeconds()).min().orElse(0);
        final double end = byWorker.stream().mapToDouble(r -> r.endSeconds()).max().orElse(0);
        final Map<String, Object> s = new LinkedHashMap<>();
        final List<Map<String, Object>> curve = accuracyCurve(rounds, byWorker.size(), t0);
        Double tta = null;
        for (final Map<String, Object> point : curve) {
            if ((double) point.get("accuracy") >= targetAccuracy) {
                tta = (double) point.get("seconds");
                break;
            }
        }
        final double finalAccuracy = byWorker.stream().mapToDouble(r -> r.finalAccuracy()).average().orElse(0);
        if (tta == null && finalAccuracy >= targetAccuracy) {
            tta = end - t0;
        }
        double wall = 0;
        double compute = 0;
        double waiting = 0;
        double evaluation = 0;
        double evaluationOnTheClock = 0;
        for (final WorkerResult r : byWorker) {
            wall += r.endSeconds() - r.startSeconds();
            compute += r.computeSeconds() + r.injectedSeconds();
            waiting += r.waitingSeconds();
            evaluation += r.evaluationSeconds();
            evaluationOnTheClock += r.deferredEvaluation() ? 0 : r.evaluationSeconds();
        }
        s.put("finalAccuracy", finalAccuracy);
        s.put("jctSeconds", end - t0);
        s.put("targetAccuracy", targetAccuracy);
        s.put("ttaSeconds", tta);
        s.put("cumulativeWaitingSeconds", waiting);
        s.put("computeShare", wall > 0 ? compute / wall : 0);
        final List<String> hashes = new ArrayList<>();
        final List<Double> accuracies = new ArrayList<>();
        for (final WorkerResult r : byWorker) {
            hashes.add(r.modelHash());
            accuracies.add(r.finalAccuracy());
        }
        s.put("modelHashes", hashes);
        s.put("modelsEqual", hashes.stream().distinct().count() == 1);
        s.put("finalAccuracies", accuracies);
        s.put("finalLoss", byWorker.stream().mapToDouble(r -> r.finalLoss()).average().orElse(0));
        final Map<String, Object> perRound = perRound(rounds);
        perRound.put("evaluationSeconds", rounds.isEmpty() ? 0.0 : evaluation / rounds.size());
        perRound.put("evaluationDeferred", byWorker.stream().allMatch(r -> r.deferredEvaluation()));
        perRound.put("otherSeconds", rounds.isEmpty() ? 0.0
            : Math.max(0, wall - compute - waiting - evaluationOnTheClock) / rounds.size());
        s.put("perRound", perRound);
        s.put("staleness", staleness(rounds));
        s.put("accuracyCurve", curve);
        final List<Double> waitingPerWorker = new ArrayList<>();
        byWorker.forEach(r -> waitingPerWorker.add(r.waitingSeconds()));
        s.put("waitingSecondsPerWorker", waitingPerWorker);
        final List<Integer> skipped = new ArrayList<>();
        byWorker.forEach(r -> skipped.add(r.skippedRounds()));
        s.put("skippedRoundsPerWorker", skipped);
        final List<Integer> dropped = new ArrayList<>();
        byWorker.forEach(r -> dropped.add(r.droppedRounds()));
        s.put("droppedRoundsPerWorker", dropped);
        final List<Long> samples = new ArrayList<>();
        byWorker.forEach(r -> samples.add(r.samples()));
        s.put("samplesPerWorker", samples);
        return s;
    }

    /** Per evaluated round that every worker evaluated: mean accuracy, at the time the last one evaluated it. */
    private static List<Map<String, Object>> accuracyCurve(final List<RoundRecord> rounds, final int workers, final double t0) {
        final TreeMap<Integer, List<RoundRecord>> evaluated = new TreeMap<>();
        for (final RoundRecord r : rounds) {
            if (r.accuracy() != null) {
                evaluated.computeIfAbsent(r.round(), k -> new ArrayList<>()).add(r);
            }
        }
        final List<Map<String, Object>> curve = new ArrayList<>();
        evaluated.forEach((round, list) -> {
            if (list.size() < workers) {
                return;
            }
            final Map<String, Object> point = new LinkedHashMap<>();
            point.put("round", round);
            point.put("seconds", list.stream().mapToDouble(r -> r.evaluatedSeconds() == null ? r.releaseSeconds() : r.evaluatedSeconds())
                .max().orElse(0) - t0);
            point.put("accuracy", list.stream().mapToDouble(r -> r.accuracy()).average().orElse(0));
            curve.add(point);
        });
        return curve;
    }

    /** Mean seconds per worker and round: compute, injected, communication, waiting for peers. */
    private static Map<String, Object> perRound(final List<RoundRecord> rounds) {
        final Map<Integer, Double> lastSend = new HashMap<>();
        for (final RoundRecord r : rounds) {
            lastSend.merge(r.round(), r.sendSeconds(), Math::max);
        }
        double compute = 0;
        double injected = 0;
        double communication = 0;
        double peers = 0;
        for (final RoundRecord r : rounds) {
            compute += r.computeSeconds();
            injected += r.injectedSeconds();
            final double comm = Math.min(r.waitingSeconds(), Math.max(0, r.releaseSeconds() - lastSend.get(r.round())));
            communication += comm;
            peers += r.waitingSeconds() - comm;
        }
        final int n = Math.max(1, rounds.size());
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("computeSeconds", compute / n);
        m.put("injectedSeconds", injected / n);
        m.put("communicationSeconds", communication / n);
        m.put("waitingForPeersSeconds", peers / n);
        m.put("records", rounds.size());
        return m;
    }

    private static Map<String, Object> staleness(final List<RoundRecord> rounds) {
        final TreeMap<Integer, Integer> histogram = new TreeMap<>();
        long sum = 0;
        int max = 0;
        for (final RoundRecord r : rounds) {
            histogram.merge(r.staleness(), 1, Integer::sum);
            sum += r.staleness();
            max = Math.max(max, r.staleness());
        }
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("max", max);
        m.put("mean", rounds.isEmpty() ? 0.0 : (double) sum / rounds.size());
        final Map<String, Object> h = new LinkedHashMap<>();
        histogram.forEach((k, v) -> h.put(String.valueOf(k), v));
        m.put("histogram", h);
        return m;
    }
}
