package io.serene.launch;

import java.io.PrintStream;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A training run's {@code summary.json} (and the JSON line {@code serene train --json} ends with),
 * written and read as this type (see {@link TrainSummary} for how each figure is measured).
 *
 * @param schemaVersion          {@link io.serene.training.Json#SCHEMA_VERSION}
 * @param ttaSeconds             time to the target accuracy, null if never reached
 * @param perRound               per round and worker, on average
 * @param accuracyCurve          per evaluated round every worker evaluated: the mean accuracy and when
 * @param switches               the controller's config changes
 * @param failures               the workers that died (the figures are the others', unless a relaunch brought them back)
 * @param relaunches             each time the job was relaunched from its checkpoints, and why
 * @param run                    the job's shape and the workers' training settings
 * @param switchCounters         the switch's counters at the end
 * @param fidelity               which clock made the times, and whether the host kept up with the modelled one
 */
public record RunSummary(int schemaVersion, double finalAccuracy, double jctSeconds, double targetAccuracy, Double ttaSeconds,
                         double cumulativeWaitingSeconds, double computeShare, List<String> modelHashes, boolean modelsEqual,
                         List<Double> finalAccuracies, double finalLoss, PerRound perRound, Staleness staleness,
                         List<CurvePoint> accuracyCurve, List<Double> waitingSecondsPerWorker, List<Integer> skippedRoundsPerWorker,
                         List<Integer> droppedRoundsPerWorker, List<Long> samplesPerWorker, int modeSwitches, List<ModeSwitch> switches,
                         List<Failure> failures, List<Relaunch> relaunches, Map<String, Object> run, Map<String, Long> switchCounters, long seed,
                         Fidelity fidelity) {
    /**
     * Which clock made a run's times and whether it held. {@code clock} is {@code modelled} (a device
     * modelled by {@code stepTime}) or {@code host} (no device: the times are this host's, never a
     * cluster's); {@code faithful} only for a modelled clock whose steps overran their modelled time in
     * at most {@link TrainSummary#FAITHFUL_OVERRUN_SHARE} of the steps (and, with a modelled link, whose
     * transfers ended late in at most that share: {@link io.serene.transport.ModelledLink}); {@code verdict} says so in words, with the
     * cause and what to change when it did not hold.
     */
    public record Fidelity(String clock, String stepTime, long steps, long overrunSteps, double overrunShare, double maxOverrunMs,
                           double hostComputeSeconds, String link, long linkPackets, long linkTransfers, long lateLinkTransfers,
                           long droppedLinkPackets,
                           double maxLinkLateMs, Double hostBusyShare, boolean faithful, String verdict) {
    }

    /** A worker that died: its exit code, why (killed by --faults, or its exit), and the rounds it had finished. */
    public record Failure(int worker, int exitCode, String cause, int roundsDone) {
    }

    /**
     * The job relaunched from the checkpoints every worker held after {@code fromRound} rounds (0: from
     * the start); {@code planned}: by --faults (else a death --max-restarts allowed to relaunch for).
     */
    public record Relaunch(String reason, int fromRound, boolean planned) {
    }

    /** Mean seconds per worker and round, and how many records they come from. */
    public record PerRound(double computeSeconds, double injectedSeconds, double communicationSeconds, double waitingForPeersSeconds,
                           int records, double evaluationSeconds, boolean evaluationDeferred, double otherSeconds) {
    }

    /** Staleness over every worker's rounds: its maximum, mean and histogram (staleness as text to count). */
    public record Staleness(int max, double mean, Map<String, Integer> histogram) {
    }

    /** The workers' mean test accuracy after a round, and when the last of them held that model. */
    public record CurvePoint(int round, double seconds, double accuracy) {
    }

    /**
     * A config change the controller made: in force from {@code round}, decided once R was
     * {@code decidedAtRound}. An auto policy's also carries what its model predicted of the config
     * (round time, share of the samples kept), the runner-up, and the round time measured over the
     * rounds after it (null where not measured: the run ended first, or a rule decided).
     */
    public record ModeSwitch(int round, int decidedAtRound, String from, String to, String reason, Double predictedRoundMs,
                             Double predictedShare, String runnerUp, Double measuredRoundMs) {
        /** A rule's decision: no prediction. */
        public ModeSwitch(final int round, final int decidedAtRound, final String from, final String to, final String reason) {
            this(round, decidedAtRound, from, to, reason, null, null, null, null);
        }
    }

    /** This summary with the run's settings and what the launcher saw added to the measured figures. */
    RunSummary with(final List<ModeSwitch> modeSwitchList, final List<Failure> died, final List<Relaunch> relaunchList,
                    final Map<String, Object> runSettings,
                    final Map<String, Long> counters, final long runSeed, final Fidelity verdict) {
        return new RunSummary(schemaVersion, finalAccuracy, jctSeconds, targetAccuracy, ttaSeconds, cumulativeWaitingSeconds, computeShare,
            modelHashes, modelsEqual, finalAccuracies, finalLoss, perRound, staleness, accuracyCurve, waitingSecondsPerWorker,
            skippedRoundsPerWorker, droppedRoundsPerWorker, samplesPerWorker, modeSwitchList.size(), modeSwitchList, died, relaunchList, runSettings,
            counters, runSeed, verdict);
    }

    /** Prints the headline figures: JCT, time to accuracy, the round's parts, the models, deaths and relaunches, the clock. */
    public void printHeadline(final PrintStream out) {
        final RunSummary.PerRound per = perRound();
        final Double tta = ttaSeconds();
        out.printf(Locale.ROOT, "policy %s: JCT %.2f s, time to %.2f accuracy %s, final accuracy %.4f, cumulative waiting %.2f s, "
                + "compute share %.2f%n", run().get("policy"), jctSeconds(), targetAccuracy(),
            tta == null ? "never" : String.format(Locale.ROOT, "%.2f s", tta), finalAccuracy(), cumulativeWaitingSeconds(),
            computeShare());
        out.printf(Locale.ROOT, "per round and worker: compute %.2f ms (+%.2f ms injected), communication %.2f ms, waiting for peers "
                + "%.2f ms, evaluation %.2f ms%s, other %.2f ms%n", per.computeSeconds() * 1e3, per.injectedSeconds() * 1e3,
            per.communicationSeconds() * 1e3, per.waitingForPeersSeconds() * 1e3, per.evaluationSeconds() * 1e3,
            per.evaluationDeferred() ? " (after training, off the clock)" : "", per.otherSeconds() * 1e3);
        out.println("model hashes " + (modelsEqual() ? "all equal: " : "differ: ") + modelHashes());
        final List<RunSummary.Relaunch> relaunches = relaunches() == null ? List.of() : relaunches();
        for (final RunSummary.Failure f : failures() == null ? List.<RunSummary.Failure>of() : failures()) {
            out.println("worker " + f.worker() + " died after " + f.roundsDone() + " rounds (" + f.cause() + ")"
                + (relaunches.isEmpty() ? "; the figures are the others'" : ""));
        }
        for (final RunSummary.Relaunch r : relaunches) {
            out.println("the job went back to " + (r.fromRound() == 0 ? "the start" : "round " + r.fromRound()) + ": " + r.reason());
        }
        if (modeSwitches() > 0) {
            out.println("mode switches: " + modeSwitches());
        }
        if (fidelity() != null) {
            out.println("clock: " + fidelity().verdict());
        }
    }
}
