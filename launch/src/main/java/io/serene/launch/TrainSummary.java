package io.serene.launch;

import io.serene.training.Json;
import io.serene.training.ModelledSteps;
import io.serene.training.RoundRecord;
import io.serene.training.WorkerResult;
import io.serene.transport.LinkModel;
import io.serene.transport.ModelledLink;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
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
    /** A modelled clock held if at most this share of the steps overran their modelled time. */
    static final double FAITHFUL_OVERRUN_SHARE = 0.01;

    private TrainSummary() {
    }

    /**
     * The fidelity verdict of a run whose workers reported {@code results}, with device model
     * {@code stepTime} ("0": none), modelled link {@code link} ({@link LinkModel#NONE}: none) and the
     * host's processors {@code hostBusy} busy (null: unknown); {@code virtual}: the run was in virtual
     * time, where the modelled clock holds by construction. {@code communicationSeconds} (null:
     * unknown) is a round's mean communication: without a modelled link it is this host's, not the
     * model's, and the verdict says how much.
     */
    static RunSummary.Fidelity fidelity(final List<WorkerResult> results, final String stepTime, final LinkModel link, final Double hostBusy,
                                        final boolean virtual, final Double communicationSeconds) {
        final String busy = hostBusy == null ? "" : String.format(Locale.ROOT, "; the host's processors were %.0f%% busy", 100 * hostBusy);
        final List<ModelledSteps.Report> devices = results.stream().map(WorkerResult::device).filter(Objects::nonNull).toList();
        final List<ModelledLink.Report> links = results.stream().map(WorkerResult::link).filter(Objects::nonNull).toList();
        final long packets = links.stream().mapToLong(ModelledLink.Report::packets).sum();
        final long transfers = links.stream().mapToLong(ModelledLink.Report::transfers).sum();
        final long late = links.stream().mapToLong(ModelledLink.Report::lateTransfers).sum();
        final long dropped = links.stream().mapToLong(ModelledLink.Report::droppedPackets).sum();
        final double maxLateMs = links.stream().mapToDouble(ModelledLink.Report::maxLateMs).max().orElse(0);
        final double lateShare = transfers == 0 ? 0 : (double) late / transfers;
        final boolean linkHeld = lateShare <= FAITHFUL_OVERRUN_SHARE;
        final String linkPart = links.isEmpty() ? "" : String.format(Locale.ROOT, "; %d of %d transfers (%.1f%%) ended more than 1 ms "
            + "late on the modelled link of %s%s", late, transfers, 100 * lateShare, link, linkHeld ? "" : String.format(Locale.ROOT,
            ", by up to %.1f ms", maxLateMs));
        if (devices.isEmpty()) {
            return new RunSummary.Fidelity("host", stepTime, 0, 0, 0, 0, 0, link.toString(), packets, transfers, late, dropped, maxLateMs,
                hostBusy, false, "the host's clock: no device modelled (--step-time 0), so every time is this host's, not a cluster's" + linkPart
                + busy);
        }
        final long steps = devices.stream().mapToLong(ModelledSteps.Report::steps).sum();
        if (virtual) {
            // the host's compute left out: the same inputs give the same summary
            return new RunSummary.Fidelity("virtual", stepTime, steps, 0, 0, 0, 0, link.toString(), packets, transfers, 0, dropped, 0,
                hostBusy, true, "virtual time: every time is the modelled cluster's, exactly (steps of " + stepTime + " a batch, "
                + (links.isEmpty() ? "communication only a switch hop: no --link-rate" : "the modelled link of " + link)
                + "); the host's own work (the switch, applying aggregates) takes no time in it");
        }
        final long overrun = devices.stream().mapToLong(ModelledSteps.Report::overrunSteps).sum();
        final double host = devices.stream().mapToDouble(ModelledSteps.Report::hostComputeSeconds).sum();
        final double maxMs = 1e3 * devices.stream().mapToDouble(ModelledSteps.Report::maxOverrunSeconds).max().orElse(0);
        final double share = steps == 0 ? 0 : (double) overrun / steps;
        final boolean stepsHeld = share <= FAITHFUL_OVERRUN_SHARE;
        final String counted = String.format(Locale.ROOT, "%d of %d steps (%.1f%%) overran their modelled time of %s a batch%s", overrun,
            steps, 100 * share, stepTime, stepsHeld ? "" : String.format(Locale.ROOT, ", by up to %.1f ms", maxMs));
        final String verdict = stepsHeld && linkHeld
            ? "faithful: the modelled clock held (" + counted + linkPart + busy + ")"
                + (links.isEmpty() ? "; communication at this host's speed (no --link-rate)" + (communicationSeconds == null ? ""
                    : String.format(Locale.ROOT, ": %.1f ms a round, on top of the model", 1e3 * communicationSeconds)) : "")
            : "NOT faithful: " + counted + linkPart + busy + ": this host could not keep up with the modelled "
                + (stepsHeld ? "link" : "device") + ", so the times are not a cluster's; use fewer workers, "
                + (stepsHeld ? "a slower link (a lower --link-rate)" : "a slower device (a longer --step-time)") + ", or serene sim";
        return new RunSummary.Fidelity("modelled", stepTime, steps, overrun, share, maxMs, host, link.toString(), packets, transfers,
            late, dropped, maxLateMs, hostBusy, stepsHeld && linkHeld, verdict);
    }

    /**
     * When a run first held a model of the target accuracy: the first point of its curve at or above
     * it, else the end if the final model is; null if never.
     */
    public static Double timeToTarget(final List<RunSummary.CurvePoint> curve, final double target, final double finalAccuracy,
                                      final double jctSeconds) {
        for (final RunSummary.CurvePoint point : curve) {
            if (point.accuracy() >= target) {
                return point.seconds();
            }
        }
        return finalAccuracy >= target ? jctSeconds : null;
    }

    /** The summary's measured figures (the caller adds the run's settings, switches and counters: {@link RunSummary#with}). */
    static RunSummary of(final List<RoundRecord> rounds, final List<WorkerResult> results, final double targetAccuracy) {
        if (results.isEmpty()) {
            throw new IllegalArgumentException("no worker results to summarize");
        }
        final List<WorkerResult> byWorker = new ArrayList<>(results);
        byWorker.sort(Comparator.comparingInt(WorkerResult::worker));
        final double t0 = byWorker.stream().mapToDouble(WorkerResult::startSeconds).min().orElse(0);
        final double end = byWorker.stream().mapToDouble(WorkerResult::endSeconds).max().orElse(0);
        final List<RunSummary.CurvePoint> curve = accuracyCurve(rounds, byWorker.size(), t0);
        final double finalAccuracy = byWorker.stream().mapToDouble(WorkerResult::finalAccuracy).average().orElse(0);
        final Double tta = timeToTarget(curve, targetAccuracy, finalAccuracy, end - t0);
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
        final List<String> hashes = byWorker.stream().map(WorkerResult::modelHash).toList();
        final RunSummary.PerRound perRound = perRound(rounds, rounds.isEmpty() ? 0.0 : evaluation / rounds.size(),
            byWorker.stream().allMatch(WorkerResult::deferredEvaluation),
            rounds.isEmpty() ? 0.0 : Math.max(0, wall - compute - waiting - evaluationOnTheClock) / rounds.size());
        return new RunSummary(Json.SCHEMA_VERSION, finalAccuracy, end - t0, targetAccuracy, tta, waiting, wall > 0 ? compute / wall : 0,
            hashes, hashes.stream().distinct().count() == 1, byWorker.stream().map(WorkerResult::finalAccuracy).toList(),
            byWorker.stream().mapToDouble(WorkerResult::finalLoss).average().orElse(0), perRound, staleness(rounds), curve,
            byWorker.stream().map(WorkerResult::waitingSeconds).toList(), byWorker.stream().map(WorkerResult::skippedRounds).toList(),
            byWorker.stream().map(WorkerResult::droppedRounds).toList(), byWorker.stream().map(WorkerResult::samples).toList(),
            0, List.of(), List.of(), List.of(), Map.of(), Map.of(), 0, null);
    }

    /** Per evaluated round that every worker evaluated: mean accuracy, at the time the last one evaluated it. */
    private static List<RunSummary.CurvePoint> accuracyCurve(final List<RoundRecord> rounds, final int workers, final double t0) {
        final TreeMap<Integer, List<RoundRecord>> evaluated = new TreeMap<>();
        for (final RoundRecord r : rounds) {
            if (r.accuracy() != null) {
                evaluated.computeIfAbsent(r.round(), k -> new ArrayList<>()).add(r);
            }
        }
        final List<RunSummary.CurvePoint> curve = new ArrayList<>();
        evaluated.forEach((round, list) -> {
            if (list.size() >= workers) {
                curve.add(new RunSummary.CurvePoint(round,
                    list.stream().mapToDouble(r -> r.evaluatedSeconds() == null ? r.releaseSeconds() : r.evaluatedSeconds()).max().orElse(0)
                        - t0, list.stream().mapToDouble(RoundRecord::accuracy).average().orElse(0)));
            }
        });
        return curve;
    }

    /** Mean seconds per worker and round: compute, injected, communication, waiting for peers. */
    private static RunSummary.PerRound perRound(final List<RoundRecord> rounds, final double evaluationSeconds, final boolean deferred,
                                                final double otherSeconds) {
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
        return new RunSummary.PerRound(compute / n, injected / n, communication / n, peers / n, rounds.size(), evaluationSeconds, deferred,
            otherSeconds);
    }

    private static RunSummary.Staleness staleness(final List<RoundRecord> rounds) {
        final TreeMap<Integer, Integer> histogram = new TreeMap<>();
        long sum = 0;
        int max = 0;
        for (final RoundRecord r : rounds) {
            histogram.merge(r.staleness(), 1, Integer::sum);
            sum += r.staleness();
            max = Math.max(max, r.staleness());
        }
        final Map<String, Integer> h = new LinkedHashMap<>();
        histogram.forEach((k, v) -> h.put(String.valueOf(k), v));
        return new RunSummary.Staleness(max, rounds.isEmpty() ? 0.0 : (double) sum / rounds.size(), h);
    }
}
