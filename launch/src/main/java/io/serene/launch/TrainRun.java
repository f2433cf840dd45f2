package io.serene.launch;

import io.serene.controlplane.Controller;
import io.serene.controlplane.PolicyCompiler;
import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.node.ControlServer;
import io.serene.node.SilenceWatch;
import io.serene.node.StallWatch;
import io.serene.node.SwitchNode;
import io.serene.node.ControlAccess;
import io.serene.node.SwitchMetrics;
import io.serene.node.SwitchMonitor;
import io.serene.launch.output.RunTraces;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.protocol.JobKeys;
import io.serene.training.Checkpoint;
import io.serene.training.CheckpointDir;
import io.serene.training.Json;
import io.serene.training.RoundRecord;
import io.serene.training.TrainSettings;
import io.serene.training.WorkerResult;
import io.serene.training.data.FashionMnist;
import io.serene.training.data.GlobalBatch;

import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * One training run: the switch in this process (and the policy's controller, if any), one worker
 * process per worker ({@code serene worker}, one JVM each: PyTorch allows one gradient collector per
 * process), their progress on one line, and the summary from their round records. The workers stop
 * with this process: on Ctrl-C (a shutdown hook ends them) and if it dies (they exit when their
 * standard input closes). If one worker fails, the others are stopped and the run fails with its
 * last output.
 */
public final class TrainRun {
    /** The command line's main class, which a worker process runs as {@code serene worker} (HelpTextTest checks the name). */
    public static final String WORKER_MAIN = "io.serene.harness.cli.Serene";

    private final RunSettings s;
    private final TrainSettings t;
    private final PrintStream out;
    /** Where the run's files go. */
    private final RunFiles files;
    /** The job's secret, made for this run: its switch and workers hold it, no other process does. */
    private final String secret = JobKeys.newSecret();

    public TrainRun(final RunSettings settings, final PrintStream out) {
        this.s = settings;
        this.t = settings.training();
        this.files = new RunFiles(settings.out());
        this.out = out;
    }

    /** Runs the job to its end and returns the summary (also written to out/summary.json). */
    public RunSummary run() throws Exception {
        final SyncSchedule schedule = s.policy() != null ? null : SyncSchedule.parse(s.sync());
        if (s.policy() != null) {
            PolicyCompiler.requireSwitchTelemetry(s.policy(), "in serene train");
            // fails naming what does not fit the job or a group
            PolicyCompiler.compile(s.policy(), s.job(), s.workers());
        }
        final FashionMnist dataset = FashionMnist.load(t.data());
        final int rounds = t.roundsFor(dataset.train.size() / s.workers());
        Files.createDirectories(s.out().resolve("workers"));
        if (s.pytorch() != null) {
            PytorchRanks.check(s.pytorch());
            DdpBaseline.writePlan(s.out().resolve(PytorchRanks.PLAN), dataset.train, t, s.workers(), rounds);
            Files.createDirectories(files.evaluationShare());
        }
        int base = 0;
        long epochMs = System.currentTimeMillis();
        if (s.resume()) {
            base = CheckpointDir.newestCommon(files.checkpoints(), s.workers());
            final List<String> damaged = CheckpointDir.damaged(files.checkpoints(), s.workers());
            if (base == 0) {
                throw new IllegalArgumentException("--resume: no checkpoint every worker holds in " + files.checkpoints()
                    + (damaged.isEmpty() ? "" : " that reads clean (" + String.join("; ", damaged) + ")")
                    + " (a run writes them with --checkpoint-every N)");
            }
            if (!s.quiet()) {
                // the newest common checkpoint that reads clean, and what was passed over on the way
                damaged.forEach(d -> out.println("passed over: " + d));
            }
            if (base >= rounds) {
                throw new IllegalArgumentException("--resume: the checkpoints are after round " + base + " of " + rounds + "; nothing left");
            }
            // the resumed run's time axis goes on from the checkpoint: the time between is no part of the run
            epochMs = System.currentTimeMillis() - Math.round(1e3 * checkpointEndSeconds(base));
        }
        // quiet: only failures, which reach the caller as exceptions
        final PrintStream say = s.quiet() ? new PrintStream(OutputStream.nullOutputStream()) : out;
        final Progress progress = new Progress(say, s.workers(), rounds, t.deferredEval());
        final List<Controller.Decision> decisions = new ArrayList<>();
        if (s.virtual()) {
            say.println("records in " + s.out());
            final VirtualRun.Outcome virtual = new VirtualRun(s, rounds, files::recordsFile, files.evaluationShare(),
                s.out().resolve("workers").resolve("workers.log"), say).run(schedule, startConfig(schedule, 0), decisions, progress);
            return summarize(virtual.results(), List.of(), List.of(), rounds, decisions, virtual.counters(),
                syncChanges(startConfig(schedule, 0), schedule, decisions), 0, null);
        }
        final Launch launch = new Launch(schedule, rounds, epochMs, progress, say, decisions);
        int restarts = 0;
        while (true) {
            if (base > 0) {
                progress.relaunched(base);
                say.println("the job goes on from its checkpoint after round " + base);
            }
            final WorkerProcesses workers = launch.attempt(base);
            final String reason = workers.relaunchReason();
            if (reason == null) {
                final SyncConfig initial = startConfig(schedule, 0);
                final List<WorkerResult> results = new ArrayList<>();
                for (int w = 0; w < s.workers(); w++) {
                    if (!workers.dead(w)) {
                        results.add(Json.read(workers.result(w), WorkerResult.class));
                    }
                }
                return summarize(results, launch.failures, launch.relaunches, rounds, decisions, launch.counters,
                    syncChanges(initial, schedule, decisions), epochMs, launch.load.busyShare());
            }
            final boolean planned = launch.plannedRelaunch;
            if (!planned && ++restarts > s.maxRestarts()) {
                throw new IllegalStateException(reason + ", and the run was relaunched " + s.maxRestarts() + " times already (--max-restarts)");
            }
            base = CheckpointDir.newestCommon(files.checkpoints(), s.workers());
            CheckpointDir.damaged(files.checkpoints(), s.workers()).forEach(d -> say.println("passed over: " + d));
            launch.relaunches.add(new RunSummary.Relaunch(reason, base, planned));
        }
    }

    /** One launch of the job after another, from round 0 or a checkpoint; what spans them is kept here. */
    private final class Launch {
        private final SyncSchedule schedule;
        private final int rounds;
        private final long epochMs;
        private final Progress progress;
        private final PrintStream say;
        private final List<Controller.Decision> decisions;
        /** The workers that died in every launch, in order. */
        final List<RunSummary.Failure> failures = new ArrayList<>();
        /** The switch counters, summed over the launches. */
        final Map<String, Long> counters = new LinkedHashMap<>();
        /** The host's processor load while the workers ran, over the launches. */
        final HostLoad load = new HostLoad();
        final List<RunSummary.Relaunch> relaunches = Collections.synchronizedList(new ArrayList<>());
        /** The faults that fired (each fires once, whatever launch it falls in). */
        private final Set<FaultPlan.Fault> fired = ConcurrentHashMap.newKeySet();
        /** Whether the last launch ended for a planned restart (not counted against --max-restarts). */
        volatile boolean plannedRelaunch;
        /** Why the job is being rebuilt in place, and whether planned; deaths --max-restarts brought back. */
        private volatile String rebuildReason;
        private volatile boolean rebuildPlanned;
        private int restartsUsed;

        Launch(final SyncSchedule schedule, final int rounds, final long epochMs, final Progress progress, final PrintStream say,
               final List<Controller.Decision> decisions) {
            this.schedule = schedule;
            this.rounds = rounds;
            this.epochMs = epochMs;
            this.progress = progress;
            this.say = say;
            this.decisions = decisions;
        }

        /**
         * Runs a switch (a new one: the job is new to it, its round 0 the run's round {@code base}) and every
         * worker, from their checkpoints after round {@code base} if it is not 0, until the workers end or
         * are ended for a relaunch ({@link WorkerProcesses#relaunchReason}).
         */
        WorkerProcesses attempt(final int base) throws Exception {
            plannedRelaunch = false;
            final SyncConfig initial = startConfig(schedule, base);
            final List<Throwable> switchErrors = Collections.synchronizedList(new ArrayList<>());
            final SwitchPipeline pipeline = new SwitchPipeline(switchContext(s, initial, secret), switchErrors::add);
            final StallWatch stalls = new StallWatch(s.stallSeconds());
            final SilenceWatch silence = new SilenceWatch(s.silenceRounds());
            final FaultPlan faults = s.faults();
            final WorkerProcesses workers;
            final SwitchNode.Builder plan = SwitchNode.builder(pipeline).watches(stalls, silence).log(progress::println)
                .metrics("127.0.0.1", s.metricsPort()).control("127.0.0.1", s.controlPort(), ControlAccess.LOCAL);
            try (XdpPlane xdp = XdpPlane.open(s);
                 SwitchNode link = (s.shm() ? plan.freshShm() : xdp != null ? xdp.serve(plan, progress::println, switchErrors::add) : plan).open()) {
                final SwitchMonitor switchMonitor = link.monitor();
                final SwitchMetrics metrics = link.metrics();
                // a fixed config that needs the dead worker cannot go on; a policy may change the config, so its job is let run
                final Attempt on = new Attempt(pipeline, link.address(), base);
                final WorkerProcesses[] these = new WorkerProcesses[1];
                workers = new WorkerProcesses(progress, w -> needed(pipeline, w), w -> handleDeath(these[0], on, w));
                these[0] = workers;
                switchMonitor.addViewListener(view -> progress.stall(view.jobs().stream()
                    .filter(j -> j.job() == s.job() && stalls.stalled(j, view.timeNs()))
                    .map(j -> StallWatch.describe(j, view.timeNs())).findFirst().orElse(null)));
                switchMonitor.addViewListener(view -> view.jobs().stream().filter(j -> j.job() == s.job()).findFirst()
                    .ifPresent(j -> fire(faults, workers, on, base + j.releasedRound(), stalls.stalled(j, view.timeNs()))));
                link.start();
                final ControlServer server = link.controlServer();
                say.printf(Locale.ROOT, "train: %d workers, %s, policy %s, stragglers %s, %d rounds of batch %d, seed %d, %s; switch on %s%s%n",
                    s.workers(), t.model(), s.policyName(), t.stragglers(), rounds, t.batch(), t.seed(),
                    (t.device().modelled() ? "modelled step " + t.device() : "the host's clock (no --step-time)")
                        + (t.link().modelled() ? ", modelled link " + t.link() : ""), link.describe(),
                    (server == null ? "" : ", control on tcp " + server.address())
                        + (metrics == null ? "" : ", metrics on http://127.0.0.1:" + metrics.port() + "/metrics"));
                say.println("records in " + s.out());
                say.flush();
                final Thread hook = new Thread(workers::stop, "train-shutdown");
                Runtime.getRuntime().addShutdownHook(hook);
                load.begin();
                try {
                    final int masterPort = s.pytorch() == null ? 0 : PytorchRanks.freePort();
                    for (int w = 0; w < s.workers(); w++) {
                        workers.start(w, s.pytorch() != null ? PytorchRanks.command(s)
                            : XdpPlane.command(xdp, w, WorkerCommandLine.of(s, t, files, w, rounds, link.address(), epochMs, base, false)),
                            s.pytorch() != null ? PytorchRanks.environment(s, files, w, rounds, link.address(), epochMs, keyText(w), masterPort)
                                : Map.of(JobKeys.SECRET_ENV, keyText(w)), files.logFile(w));
                    }
                    final JobMonitor monitor = new JobMonitor(pipeline, s.job(), s.workers(), s.policy(), schedule, decisions, progress, base,
                        silence, this::rebuilt);
                    monitor.maxBatchGrowth = t.rebalance() ? GlobalBatch.MAX_GROWTH : 1;
                    monitor.start();
                    try {
                        workers.awaitAll();
                    } finally {
                        monitor.interrupt();
                        monitor.join(2_000);
                    }
                    if (monitor.failure != null && workers.relaunchReason() == null) {
                        throw monitor.failure;
                    }
                } finally {
                    load.end();
                    workers.stop();
                    failures.addAll(workers.failures());
                    if (workers.relaunchReason() == null) {
                        progress.finish();
                    }
                    try {
                        Runtime.getRuntime().removeShutdownHook(hook);
                    } catch (final IllegalStateException shuttingDown) {
                        // the hook is running: it stops the workers
                    }
                    if (server != null) {
                        server.close();
                    }
                }
                if (!switchErrors.isEmpty()) {
                    throw new IllegalStateException("the switch reported " + switchErrors.size() + " errors, first: " + switchErrors.get(0));
                }
                link.host().call(() -> pipeline.counters().snapshot()).get(10, TimeUnit.SECONDS)
                    .forEach((k, v) -> counters.merge(k.name().toLowerCase(Locale.ROOT), v, Long::sum));
                XdpPlane.counters(xdp, link).forEach((k, v) -> counters.merge("xdp_" + k.toLowerCase(Locale.ROOT), v, Long::sum));
            }
            return workers;
        }

        /**
         * Fires the faults due at R = {@code released} (the run's rounds): kills, then the restarts
         * of killed workers that are due, or whose job waits for them ({@code stalled}), and switch restarts.
         */
        private void fire(final FaultPlan faults, final WorkerProcesses workers, final Attempt on, final int released,
                          final boolean stalled) {
            for (final FaultPlan.Fault f : faults.faults()) {
                if (fired.contains(f)) {
                    continue;
                }
                switch (f.kind()) {
                    case KILL -> {
                        if (released >= f.round() && fired.add(f)) {
                            workers.kill(f.worker(), f.toString(), released);
                        }
                    }
                    case RESTART -> {
                        final boolean killed = faults.faults().stream().anyMatch(k -> k.kind() == FaultPlan.Kind.KILL
                            && k.worker() == f.worker() && fired.contains(k));
                        if (killed && workers.dead(f.worker()) && (released >= f.round() || stalled) && fired.add(f)) {
                            bringBack(workers, on, f.worker(), "--faults " + f + " (worker " + f.worker() + " back"
                                + (released >= f.round() ? "" : ", early: the job waits for it") + ", round " + released + " released)", true);
                        }
                    }
                    case SWITCH_RESTART -> {
                        if (released >= f.round() && fired.add(f)) {
                            final String why = "--faults " + f + " (the switch lost its state at round " + released + ")";
                            if (s.checkpointEvery() > 0) {
                                // the workers rebuild the job from their checkpoints by themselves
                                rebuildReason = why;
                                rebuildPlanned = true;
                                progress.println("fault: the switch loses every job (" + f + ", round " + released + " released)");
                                JobMonitor.onSwitch(on.pipeline(), p -> {
                                    p.loseAllJobs();
                                    return null;
                                });
                            } else {
                                plannedRelaunch = true;
                                workers.relaunch(why + "; no checkpoints: from the start");
                            }
                        }
                    }
                    default -> throw new IllegalStateException("unknown fault " + f);
                }
            }
        }

        /**
         * Brings dead worker w back: with checkpoints it is started again and rejoins, the job rebuilt
         * from the checkpoints every worker holds (the others go back there by themselves); without,
         * the job is relaunched from the start.
         */
        private void bringBack(final WorkerProcesses workers, final Attempt on, final int w, final String why, final boolean planned) {
            if (s.checkpointEvery() <= 0) {
                plannedRelaunch = planned;
                workers.relaunch(why + "; no checkpoints: from the start");
                return;
            }
            rebuildReason = why;
            rebuildPlanned = planned;
            try {
                if (!workers.restart(w, WorkerCommandLine.of(s, t, files, w, rounds, on.switchAddress(), epochMs, on.base(), true),
                    Map.of(JobKeys.SECRET_ENV, keyText(w)), files.logFile(w))) {
                    // the others are done: no rebuild will follow
                    rebuildReason = null;
                }
            } catch (final IOException ex) {
                plannedRelaunch = planned;
                workers.relaunch(why + "; the worker could not be started again (" + ex.getMessage() + "): the job is relaunched");
            }
        }

        /**
         * Whether the run takes care of worker w's death (bringing it back): a planned restart of it
         * whose job cannot go on without it, or an unplanned death while --max-restarts allows (under a
         * config that goes on without the worker too: it is brought back, every worker going back to
         * the checkpoint with it).
         */
        private boolean handleDeath(final WorkerProcesses workers, final Attempt on, final int w) {
            final FaultPlan.Fault restart = s.faults().restartOf(w);
            if (restart != null && !fired.contains(restart)) {
                if (needed(on.pipeline(), w) && fired.add(restart)) {
                    bringBack(workers, on, w, "worker " + w + " died (" + workers.causeOfDeath(w) + ")", true);
                    return true;
                }
                return false;
            }
            final boolean killedOnPurpose = s.faults().faults().stream().anyMatch(f -> f.kind() == FaultPlan.Kind.KILL && f.worker() == w
                && fired.contains(f));
            if (killedOnPurpose || s.maxRestarts() <= restartsUsed) {
                return false;
            }
            restartsUsed++;
            bringBack(workers, on, w, "worker " + w + " died (" + workers.causeOfDeath(w) + ")", false);
            return true;
        }

        /** The job was rebuilt in place from the workers' checkpoints, going on after round {@code first}. */
        private void rebuilt(final int first) {
            final String why = rebuildReason != null ? rebuildReason : "the job was rebuilt from its workers' checkpoints";
            relaunches.add(new RunSummary.Relaunch(why, first, rebuildPlanned));
            progress.relaunched(first);
            progress.println("the job was rebuilt from its workers' checkpoints: it goes on after round " + first + " (" + why + ")");
            rebuildReason = null;
        }
    }

    /** The config the job starts with at the run's round {@code base}: the policy's start, or the schedule's entry then. */
    private SyncConfig startConfig(final SyncSchedule schedule, final int base) {
        return s.policy() != null ? s.policy().start() : schedule.configFor(base);
    }

    /**
     * The switch of a run's job: {@code initial} its config from its first round, with a policy's worker groups; its
     * packets signed under {@code secret} (null: none).
     */
    static SwitchContext switchContext(final RunSettings s, final SyncConfig initial, final String secret) {
        initial.resolve(s.workers());
        final SwitchContext context = new SwitchContext().budgetBytes(16 << 20).maxJobs(1).maxWorkers(Math.max(2, s.workers()))
            .defaultSync(initial).secret(secret == null ? null : JobKeys.secret(secret, "the run's secret"));
        if (s.policy() != null) {
            // the policy's worker groups and their start configs, in force from the job's first round
            context.defaultGroups(s.policy().groupOf(s.workers()));
            for (int g = 1; g <= s.policy().groups().size(); g++) {
                context.groupSync(g, s.policy().start(g));
            }
        }
        return context.conclude();
    }

    /** One attempt's switch, as the launcher's fault handling needs it. */
    private record Attempt(SwitchPipeline pipeline, String switchAddress, int base) {
    }


    /** The latest time on the run's axis in the workers' checkpoints after round {@code roundsDone}: when the last aggregate arrived. */
    private double checkpointEndSeconds(final int roundsDone) throws IOException {
        double end = 0;
        for (int w = 0; w < s.workers(); w++) {
            final double[] release = Checkpoint.read(Checkpoint.file(files.checkpoints(), w, roundsDone)).records().release();
            end = Math.max(end, release[release.length - 1]);
        }
        return end;
    }

    /** Worker w's own key, as its process gets it (in its environment): it can sign as no other worker. */
    private String keyText(final int w) {
        return JobKeys.credential(secret, "the run's secret").keyOf(s.job(), w).text();
    }

    /** The configs in force over the run: the start config, then a schedule's entries or the controller's decisions. */
    private static List<RunTraces.SyncChange> syncChanges(final SyncConfig initial, final SyncSchedule schedule,
                                                          final List<Controller.Decision> decisions) {
        final List<RunTraces.SyncChange> changes = new ArrayList<>();
        changes.add(new RunTraces.SyncChange(0, initial.toString(), null));
        if (schedule != null) {
            schedule.entries().stream().filter(e -> e.firstRound > 0)
                .forEach(e -> changes.add(new RunTraces.SyncChange(e.firstRound, e.config.toString(), "schedule")));
        }
        decisions.forEach(d -> changes.add(new RunTraces.SyncChange(d.firstRound, d.to, d.reason)));
        return changes;
    }

    private RunSummary summarize(final List<WorkerResult> results, final List<RunSummary.Failure> failures,
                                 final List<RunSummary.Relaunch> relaunches, final int rounds,
                                 final List<Controller.Decision> decisions,
                                          final Map<String, Long> switchCounters, final List<RunTraces.SyncChange> changes,
                                          final long epochMs, final Double hostBusy) throws IOException {
        final List<RoundRecord> all = new ArrayList<>();
        final List<String> lines = new ArrayList<>();
        for (int w = 0; w < s.workers(); w++) {
            for (final String line : Files.readAllLines(files.recordsFile(w), StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    all.add(Json.read(line, RoundRecord.class));
                    lines.add(line);
                }
            }
        }
        // records.jsonl: round by round, workers in order
        final List<Integer> order = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            order.add(i);
        }
        order.sort(Comparator.<Integer>comparingInt(i -> all.get(i).round()).thenComparingInt(i -> all.get(i).worker()));
        final StringBuilder merged = new StringBuilder();
        order.forEach(i -> merged.append(lines.get(i)).append('\n'));
        Files.writeString(s.out().resolve("records.jsonl"), merged, StandardCharsets.UTF_8);
        RunTraces.write(s.out(), "train " + s.policyName(), all, changes, epochMs / 1e3);

        final List<RunSummary.ModeSwitch> switches = decisions.stream()
            .map(d -> d.predicted == null ? new RunSummary.ModeSwitch(d.firstRound, d.releasedRound, d.from, d.to, d.reason)
                : new RunSummary.ModeSwitch(d.firstRound, d.releasedRound, d.from, d.to, d.reason, d.predicted.roundNs() / 1e6,
                    d.predicted.share(), d.runnerUp == null ? null : d.runnerUp.toString(),
                    d.measuredRoundNs > 0 ? d.measuredRoundNs / 1e6 : null)).toList();
        final Map<String, Object> run = new LinkedHashMap<>();
        run.put("workers", s.workers());
        run.put("model", s.pytorch() != null ? "pytorch " + String.join(" ", s.pytorch()) : t.model().toString());
        run.put("policy", s.policyName());
        run.put("stragglers", t.stragglers());
        run.put("rounds", rounds);
        run.putAll(s.trainingSummary());
        final RunSummary measured = TrainSummary.of(all, results, s.targetAccuracy());
        final RunSummary summary = measured.with(switches, failures, relaunches, run, switchCounters, t.seed(),
            TrainSummary.fidelity(results, t.device().text(), t.link(), hostBusy, s.virtual(), measured.perRound().communicationSeconds()));
        Files.writeString(s.out().resolve("summary.json"), Json.write(summary) + "\n", StandardCharsets.UTF_8);
        return summary;
    }

    /** Whether the job cannot go on without worker w (a fixed config needing it); false if the switch cannot tell. */
    private boolean needed(final SwitchPipeline pipeline, final int w) {
        if (s.policy() != null) {
            return false;
        }
        try {
            return JobMonitor.onSwitch(pipeline, p -> p.cannotGoOnWithout(s.job(), w, p.releasedRound(s.job()) + 1));
        } catch (final IllegalStateException ex) {
            return false;
        }
    }
}
