package io.serene.harness.launch;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.controlplane.ControlLoop;
import io.serene.controlplane.Controller;
import io.serene.controlplane.Policy;
import io.serene.controlplane.TelemetrySample;
import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.harness.cli.Serene;
import io.serene.harness.cli.WorkerCommand;
import io.serene.harness.node.SwitchControlService;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.ComputeClock;
import io.serene.training.FashionMnist;
import io.serene.training.Json;
import io.serene.training.LrSchedule;
import io.serene.training.ModelKind;
import io.serene.training.StaleMomentum;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainDefaults;
import io.serene.training.WorkerJit;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
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
    /** What to run. */
    public static final class Settings {
        public int workers = TrainDefaults.workers();
        public ModelKind model = ModelKind.parse(TrainDefaults.MODEL);
        /** A sync config or schedule (docs/sync.md); ignored when {@link #policy} is set. */
        public String sync = TrainDefaults.POLICY;
        /** A policy run by the controller; its name is reported as the run's policy. */
        public Policy policy;
        public String policyLabel;
        public String stragglers = TrainDefaults.STRAGGLERS;
        public Integer rounds;
        public Double epochs;
        public int batch = TrainDefaults.batch();
        public float learningRate = TrainDefaults.learningRate();
        public float momentum = TrainDefaults.momentum();
        /** constant, cosine or cooldown (WorkerCommand --lr-schedule). */
        public String lrSchedule = TrainDefaults.LR_SCHEDULE;
        /** The compute time workers report to the switch: cpu or wall (WorkerCommand --compute-clock). */
        public String computeClock = TrainDefaults.COMPUTE_CLOCK;
        /** The worker JVMs' JIT: c1 or tiered ({@link WorkerJit}). */
        public String workerJit = TrainDefaults.WORKER_JIT;
        /** How a round under an SSP bound is stepped (WorkerCommand --stale-momentum). */
        public String staleMomentum = TrainDefaults.STALE_MOMENTUM;
        public int evalEvery = TrainDefaults.evalEvery();
        /** Evaluate copies of the model after training, off the clock (WorkerCommand --deferred-eval). */
        public boolean deferredEval = true;
        public double targetAccuracy = TrainDefaults.targetAccuracy();
        public long seed = TrainDefaults.seed();
        public Path out;
        public Path data;
        int job = 1;
        public int controlPort = -1;
        public int timeoutSeconds = TrainDefaults.timeoutSeconds();
        /** Workers keep a round's samples near N x batch (WorkerCommand --rebalance). */
        public boolean rebalance = true;
        /** Print only failures (serene experiment prints one line per run). */
        public boolean quiet;

        /** How the workers train, as a run's summary records it (its "run" member, after the job's shape). */
        public Map<String, Object> training() {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("batch", batch);
            m.put("rebalance", rebalance);
            m.put("learningRate", Double.parseDouble(Float.toString(learningRate)));
            m.put("momentum", Double.parseDouble(Float.toString(momentum)));
            m.put("lrSchedule", lrSchedule);
            m.put("staleMomentum", staleMomentum);
            m.put("computeClock", computeClock);
            m.put("workerJit", workerJit);
            m.put("evalEvery", evalEvery);
            m.put("evaluation", deferredEval ? "deferred" : "inline");
            return m;
        }

        String policyName() {
            return policy != null ? (policyLabel != null ? policyLabel : policy.name()) : sync;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int KEEP_LINES = 20;

    private final Settings s;
    private final PrintStream out;

    public TrainRun(final Settings settings, final PrintStream out) {
        this.s = settings;
        this.out = out;
    }

    /** Runs the job to its end and returns the summary (also written to out/summary.json). */
    public Map<String, Object> run() throws Exception {
        if (s.workers <= 0 || s.workers > 64) {
            throw new IllegalArgumentException("--workers must be in 1..64, was " + s.workers);
        }
        if (s.batch <= 0 || s.evalEvery < 0 || (s.rounds != null && s.rounds <= 0) || (s.epochs != null && !(s.epochs > 0))) {
            throw new IllegalArgumentException("--rounds, --epochs and --batch must be positive and --eval-every >= 0");
        }
        if (s.rounds != null && s.epochs != null) {
            throw new IllegalArgumentException("give --rounds or --epochs, not both");
        }
        LrSchedule.parse("--lr-schedule", s.lrSchedule);
        StaleMomentum.parse("--stale-momentum", s.staleMomentum);
        ComputeClock.check("--compute-clock", s.computeClock);
        WorkerJit.parse("--worker-jit", s.workerJit);
        if (!(s.targetAccuracy >= 0 && s.targetAccuracy <= 1)) {
            throw new IllegalArgumentException("--target-accuracy must be in 0..1, was " + s.targetAccuracy);
        }
        StragglerProfile.parse(s.stragglers, s.seed, s.workers);
        final SyncSchedule schedule = s.policy != null ? null : SyncSchedule.parse(s.sync);
        final SyncConfig initial = s.policy != null ? s.policy.start() : schedule.configFor(0);
        initial.resolve(s.workers);
        if (s.policy != null) {
            for (final Policy.Rule rule : s.policy.rules()) {
                if (rule.metric == Policy.Metric.WAITING_SHARE || rule.metric == Policy.Metric.STALENESS) {
                    throw new IllegalArgumentException("policy " + s.policy.name() + ": '" + rule.condition() + "' needs "
                        + "worker-side telemetry; in serene train a policy may use lag, round_time and slowdown(worker)");
                }
            }
        }
        final Path dataDir = s.data != null ? s.data : FashionMnist.DEBIAN_DIR;
        final FashionMnist dataset = FashionMnist.load(dataDir);
        final int rounds = WorkerCommand.roundsFor(dataset.train.size() / s.workers, s.batch, s.rounds, s.epochs);
        Files.createDirectories(s.out.resolve("workers"));
        final long epochMs = System.currentTimeMillis();

        final SwitchContext context = new SwitchContext().budgetBytes(16 << 20).maxJobs(1).maxWorkers(Math.max(2, s.workers))
            .defaultSync(initial);
        if (s.policy != null) {
            // the policy's worker groups and their start configs, in force from round 0
            context.defaultGroups(s.policy.groupOf(s.workers));
            for (int g = 1; g <= s.policy.groups().size(); g++) {
                context.groupSync(g, s.policy.start(g));
            }
            // fails naming what does not fit the job or a group
            io.serene.controlplane.PolicyCompiler.compile(s.policy, s.job, s.workers);
        }
        context.conclude();
        final List<Throwable> switchErrors = java.util.Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(context, switchErrors::add);
        // quiet: only failures, which reach the caller as exceptions
        final PrintStream say = s.quiet ? new PrintStream(java.io.OutputStream.nullOutputStream()) : out;
        final Progress progress = new Progress(say, s.workers, rounds, s.deferredEval);
        final List<Controller.Decision> decisions = new ArrayList<>();
        try (UdpTransport transport = UdpTransport.create(1, true);
             UdpHost host = transport.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             SwitchControlService control = new SwitchControlService(host::call, pipeline)) {
            final io.grpc.Server server = s.controlPort < 0 ? null
                : io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", s.controlPort))
                    .addService(control).build().start();
            say.printf(Locale.ROOT, "train: %d workers, %s, policy %s, stragglers %s, %d rounds of batch %d, seed %d; switch on udp %s%s%n",
                s.workers, s.model, s.policyName(), s.stragglers, rounds, s.batch, s.seed, host.localAddress(),
                server == null ? "" : ", control on tcp 127.0.0.1:" + server.getPort());
            say.println("records in " + s.out);
            say.flush();
            final Workers workers = new Workers(progress);
            final Thread hook = new Thread(workers::stop, "train-shutdown");
            Runtime.getRuntime().addShutdownHook(hook);
            try {
                for (int w = 0; w < s.workers; w++) {
                    workers.start(w, workerCommand(w, rounds, host.localAddress().getPort(), dataDir, epochMs));
                }
                final JobMonitor monitor = new JobMonitor(host, pipeline, schedule, decisions, progress);
                monitor.start();
                try {
                    workers.awaitAll();
                } finally {
                    monitor.interrupt();
                    monitor.join(2_000);
                }
                if (monitor.failure != null) {
                    throw monitor.failure;
                }
            } finally {
                workers.stop();
                progress.finish();
                try {
                    Runtime.getRuntime().removeShutdownHook(hook);
                } catch (final IllegalStateException shuttingDown) {
                    // the hook is running: it stops the workers
                }
                if (server != null) {
                    server.shutdownNow();
                }
            }
            if (!switchErrors.isEmpty()) {
                throw new IllegalStateException("the switch reported " + switchErrors.size() + " errors, first: " + switchErrors.get(0));
            }
            final Map<String, Long> counters = new LinkedHashMap<>();
            host.call(() -> pipeline.counters().snapshot()).get(10, TimeUnit.SECONDS)
                .forEach((k, v) -> counters.put(k.name().toLowerCase(Locale.ROOT), v));
            return summarize(workers, rounds, decisions, counters);
        }
    }

    private List<String> workerCommand(final int w, final int rounds, final int switchPort, final Path dataDir, final long epochMs) {
        final List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java"));
        for (final String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("-D") || arg.startsWith("--sun-misc-unsafe") || arg.startsWith("--enable-native-access")
                || arg.startsWith("--add-opens")) {
                command.add(arg);
            }
        }
        if (WorkerJit.parse("--worker-jit", s.workerJit) == WorkerJit.C1) {
            command.add("-XX:TieredStopAtLevel=1");
        }
        command.addAll(List.of("-Dai.djl.offline=true", "-Dai.djl.pytorch.num_threads=1", "-Dai.djl.pytorch.num_interop_threads=1",
            "-Xmx512m", "-Xmn32m", "-cp", System.getProperty("java.class.path"), Serene.class.getName(), "worker",
            "--switch", "127.0.0.1:" + switchPort, "--job", "" + s.job, "--id", "" + w, "--workers", "" + s.workers,
            "--model", s.model.name().toLowerCase(Locale.ROOT), "--rounds", "" + rounds, "--batch", "" + s.batch,
            "--lr", "" + s.learningRate, "--lr-schedule", s.lrSchedule, "--momentum", "" + s.momentum,
            "--stale-momentum", s.staleMomentum, "--compute-clock", s.computeClock, "--eval-every", "" + s.evalEvery,
            "--data", dataDir.toString(), "--seed", "" + s.seed, "--stragglers", s.stragglers,
            "--timeout-seconds", "" + s.timeoutSeconds, "--records", recordsFile(w).toString(), "--epoch-ms", "" + epochMs,
            "--progress-lines", "--exit-with-parent", s.rebalance ? "--rebalance" : "--no-rebalance",
            s.deferredEval ? "--deferred-eval" : "--no-deferred-eval", "--eval-when-told"));
        return command;
    }

    private Path recordsFile(final int w) {
        return s.out.resolve("workers").resolve("worker-" + w + ".jsonl");
    }

    private Map<String, Object> summarize(final Workers workers, final int rounds, final List<Controller.Decision> decisions,
                                          final Map<String, Long> switchCounters) throws IOException {
        final List<TrainSummary.Round> all = new ArrayList<>();
        final List<String> lines = new ArrayList<>();
        for (int w = 0; w < s.workers; w++) {
            for (final String line : Files.readAllLines(recordsFile(w), StandardCharsets.UTF_8)) {
                if (!line.isBlank()) {
                    all.add(TrainSummary.Round.of(JSON.readTree(line)));
                    lines.add(line);
                }
            }
        }
        // records.jsonl: round by round, workers in order
        final List<Integer> order = new ArrayList<>();
        for (int i = 0; i < all.size(); i++) {
            order.add(i);
        }
        order.sort(Comparator.<Integer>comparingInt(i -> all.get(i).round).thenComparingInt(i -> all.get(i).worker));
        final StringBuilder merged = new StringBuilder();
        order.forEach(i -> merged.append(lines.get(i)).append('\n'));
        Files.writeString(s.out.resolve("records.jsonl"), merged, StandardCharsets.UTF_8);

        final List<TrainSummary.Result> results = new ArrayList<>();
        for (int w = 0; w < s.workers; w++) {
            results.add(TrainSummary.Result.of(JSON.readTree(workers.result(w))));
        }
        final Map<String, Object> summary = new LinkedHashMap<>(TrainSummary.of(all, results, s.targetAccuracy));
        summary.put("modeSwitches", decisions.size());
        final List<Map<String, Object>> switches = new ArrayList<>();
        for (final Controller.Decision d : decisions) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("round", d.firstRound);
            m.put("decidedAtRound", d.releasedRound);
            m.put("from", d.from);
            m.put("to", d.to);
            m.put("reason", d.reason);
            switches.add(m);
        }
        summary.put("switches", switches);
        final Map<String, Object> run = new LinkedHashMap<>();
        run.put("workers", s.workers);
        run.put("model", s.model.name().toLowerCase(Locale.ROOT));
        run.put("policy", s.policyName());
        run.put("stragglers", s.stragglers);
        run.put("rounds", rounds);
        run.putAll(s.training());
        summary.put("run", run);
        summary.put("switchCounters", switchCounters);
        summary.put("seed", s.seed);
        Files.writeString(s.out.resolve("summary.json"), Json.write(summary) + "\n", StandardCharsets.UTF_8);
        return summary;
    }

    /** Prints a summary's headline figures. */
    public static void print(final PrintStream out, final Map<String, Object> summary) {
        @SuppressWarnings("unchecked") final Map<String, Object> per = (Map<String, Object>) summary.get("perRound");
        @SuppressWarnings("unchecked") final Map<String, Object> run = (Map<String, Object>) summary.get("run");
        final Object tta = summary.get("ttaSeconds");
        out.printf(Locale.ROOT, "policy %s: JCT %.2f s, time to %.2f accuracy %s, final accuracy %.4f, cumulative waiting %.2f s, "
                + "compute share %.2f%n", run.get("policy"), (double) summary.get("jctSeconds"), (double) summary.get("targetAccuracy"),
            tta == null ? "never" : String.format(Locale.ROOT, "%.2f s", (double) tta), (double) summary.get("finalAccuracy"),
            (double) summary.get("cumulativeWaitingSeconds"), (double) summary.get("computeShare"));
        out.printf(Locale.ROOT, "per round and worker: compute %.2f ms (+%.2f ms injected), communication %.2f ms, waiting for peers "
                + "%.2f ms, evaluation %.2f ms%s, other %.2f ms%n", ms(per, "computeSeconds"), ms(per, "injectedSeconds"),
            ms(per, "communicationSeconds"), ms(per, "waitingForPeersSeconds"), ms(per, "evaluationSeconds"),
            Boolean.TRUE.equals(per.get("evaluationDeferred")) ? " (after training, off the clock)" : "", ms(per, "otherSeconds"));
        out.println("model hashes " + ((boolean) summary.get("modelsEqual") ? "all equal: " : "differ: ") + summary.get("modelHashes"));
        if ((int) summary.get("modeSwitches") > 0) {
            out.println("mode switches: " + summary.get("modeSwitches"));
        }
    }

    private static double ms(final Map<String, Object> m, final String key) {
        return (double) m.get(key) * 1e3;
    }

    /** The worker processes: started, watched, stopped. */
    private final class Workers {
        private final Progress progress;
        private final List<Process> processes = new ArrayList<>();
        private final List<Thread> readers = new ArrayList<>();
        private final List<ArrayDeque<String>> tails = new ArrayList<>();
        private final List<String> results = new ArrayList<>();
        private final long startNs = System.nanoTime();
        private int trained;

        Workers(final Progress progress) {
            this.progress = progress;
        }

        void start(final int w, final List<String> command) throws IOException {
            final ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.environment().put("MALLOC_MMAP_THRESHOLD_", "67108864");
            pb.environment().put("MALLOC_TRIM_THRESHOLD_", "268435456");
            final Process p = pb.start();
            synchronized (this) {
                processes.add(p);
                tails.add(new ArrayDeque<>());
                results.add(null);
            }
            final Thread reader = new Thread(() -> read(w, p), "worker-" + w + "-output");
            reader.setDaemon(true);
            reader.start();
            readers.add(reader);
        }

        private void read(final int w, final Process p) {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    if (line.startsWith("@progress ")) {
                        final String[] parts = line.split(" ");
                        progress.round(w, Integer.parseInt(parts[1]), Double.parseDouble(parts[2]));
                        continue;
                    }
                    if (line.equals("@trained")) {
                        trained();
                        continue;
                    }
                    synchronized (this) {
                        final ArrayDeque<String> tail = tails.get(w);
                        tail.addLast(line);
                        if (tail.size() > KEEP_LINES) {
                            tail.removeFirst();
                        }
                        if (line.startsWith("{")) {
                            results.set(w, line);
                            continue;
                        }
                    }
                    if (line.startsWith("worker " + w + " round ")) {
                        progress.evaluated(w, line);
                    } else if (w == 0 || !line.startsWith("worker " + w + "/")) {
                        progress.println(line);
                    }
                }
            } catch (final IOException | RuntimeException ex) {
                progress.println("worker " + w + ": output unreadable: " + ex);
            }
        }

        /**
         * A worker finished training and waits to evaluate its copies of the model: once every
         * worker did, all are told to go (before that, evaluating would take a processor from a
         * worker still training).
         */
        private void trained() {
            final List<Process> all;
            synchronized (this) {
                if (++trained < s.workers) {
                    return;
                }
                all = new ArrayList<>(processes);
            }
            progress.println(String.format(Locale.ROOT, "all %d workers finished training (%.1f s after they were launched); "
                + "evaluating their copies of the model on the test set (off the clock)", s.workers, (System.nanoTime() - startNs) / 1e9));
            for (final Process p : all) {
                try {
                    p.getOutputStream().write("evaluate\n".getBytes(StandardCharsets.UTF_8));
                    p.getOutputStream().flush();
                } catch (final IOException ex) {
                    progress.println("a worker's input is closed (" + ex.getMessage() + "); its exit says why");
                }
            }
        }

        /** Waits until every worker exited; fails with the first one that exited non-zero. */
        void awaitAll() throws InterruptedException {
            while (true) {
                boolean running = false;
                for (int w = 0; w < processes.size(); w++) {
                    final Process p = processes.get(w);
                    if (p.isAlive()) {
                        running = true;
                    } else if (p.exitValue() != 0) {
                        readers.get(w).join(2_000);
                        stop();
                        throw new IllegalStateException("worker " + w + " failed (exit " + p.exitValue() + "); its last output:\n  "
                            + String.join("\n  ", tail(w)));
                    }
                }
                if (!running) {
                    for (final Thread r : readers) {
                        r.join(5_000);
                    }
                    return;
                }
                Thread.sleep(50);
            }
        }

        synchronized List<String> tail(final int w) {
            return new ArrayList<>(tails.get(w));
        }

        synchronized String result(final int w) {
            final String r = results.get(w);
            if (r == null) {
                throw new IllegalStateException("worker " + w + " printed no result; its last output:\n  " + String.join("\n  ", tail(w)));
            }
            return r;
        }

        /** Ends every worker still running: politely, then forcibly after 3 s. */
        void stop() {
            final List<Process> all;
            synchronized (this) {
                all = new ArrayList<>(processes);
            }
            for (final Process p : all) {
                if (p.isAlive()) {
                    p.destroy();
                }
            }
            for (final Process p : all) {
                try {
                    if (!p.waitFor(3, TimeUnit.SECONDS)) {
                        p.destroyForcibly().waitFor(3, TimeUnit.SECONDS);
                    }
                } catch (final InterruptedException ex) {
                    p.destroyForcibly();
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /**
     * Watches the job on the switch's thread every 20 ms: installs the rest of a schedule once the
     * job exists, and feeds the policy's controller each advance of R.
     */
    private final class JobMonitor extends Thread {
        private final UdpHost host;
        private final SwitchPipeline pipeline;
        private final SyncSchedule schedule;
        private final List<Controller.Decision> decisions;
        private final Progress progress;
        volatile Exception failure;

        JobMonitor(final UdpHost host, final SwitchPipeline pipeline, final SyncSchedule schedule,
                   final List<Controller.Decision> decisions, final Progress progress) {
            super("job-monitor");
            setDaemon(true);
            this.host = host;
            this.pipeline = pipeline;
            this.schedule = schedule;
            this.decisions = decisions;
            this.progress = progress;
        }

        @Override
        public void run() {
            try {
                final int job = s.job;
                while (call(() -> pipeline.workers(job)) < 0) {
                    Thread.sleep(20);
                }
                if (schedule != null) {
                    for (final SyncSchedule.Entry e : schedule.entries()) {
                        if (e.firstRound > 0) {
                            final Status status = call(() -> pipeline.installConfig(job, e.firstRound, e.config));
                            if (status != Status.OK) {
                                throw new IllegalStateException("could not install " + e + " on the switch: " + status);
                            }
                        }
                    }
                    return;
                }
                if (s.policy == null) {
                    return;
                }
                final Controller controller = new Controller(s.policy, s.workers, new Controller.SwitchControl() {
                    @Override
                    public int earliestSwapRound() {
                        return call(() -> pipeline.earliestSwapRound(job));
                    }

                    @Override
                    public Status install(final int firstRound, final int group, final SyncConfig config) {
                        return call(() -> pipeline.installConfig(job, group, firstRound, config));
                    }
                });
                final ControlLoop loop = new ControlLoop(controller, () -> call(() -> telemetry(job)));
                while (!isInterrupted()) {
                    final List<Controller.Decision> fresh = loop.poll();
                    if (fresh == null) {
                        return;
                    }
                    for (final Controller.Decision d : fresh) {
                        decisions.add(d);
                        progress.println("policy " + s.policy.name() + ": " + d);
                    }
                    Thread.sleep(20);
                }
            } catch (final InterruptedException ex) {
                // the run ended
            } catch (final Exception ex) {
                failure = ex;
            }
        }

        private TelemetrySample telemetry(final int job) {
            final int n = pipeline.workers(job);
            if (n < 0) {
                return null;
            }
            final int released = pipeline.releasedRound(job);
            final int[] clocks = new int[n];
            final long[] iterationNs = new long[n];
            for (int w = 0; w < n; w++) {
                clocks[w] = pipeline.clock(job, w);
                iterationNs[w] = pipeline.iterationNs(job, w);
            }
            return new TelemetrySample(released, pipeline.releasedAtNs(job, released), clocks, iterationNs);
        }

        /** Runs f on the switch thread, through its command queue (the control service set its wake-up). */
        private <T> T call(final java.util.function.Supplier<T> f) {
            try {
                return pipeline.commands().submit(p -> f.get()).get(10, TimeUnit.SECONDS);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted");
            } catch (final Exception ex) {
                throw new IllegalStateException("switch thread: " + ex, ex);
            }
        }
    }

    /**
     * The run's progress on one line: on a terminal a bar redrawn in place, otherwise a line per
     * tenth of the rounds. Other output goes through {@link #println} so the two do not mix.
     */
    static final class Progress {
        private final PrintStream out;
        private final int total;
        private final int[] rounds;
        private final boolean terminal = System.console() != null;
        private final long startNs = System.nanoTime();
        private double loss = Double.NaN;
        private String accuracy;
        private int printedTenth = -1;
        private long drawnNs;
        private boolean drawn;

        Progress(final PrintStream out, final int workers, final int total, final boolean deferredEval) {
            this.out = out;
            this.total = total;
            this.rounds = new int[workers];
            this.accuracy = deferredEval ? "after training" : "-";
        }

        synchronized void round(final int w, final int round, final double lastLoss) {
            rounds[w] = round;
            if (w == 0) {
                loss = lastLoss;
            }
            int min = Integer.MAX_VALUE;
            for (final int r : rounds) {
                min = Math.min(min, r);
            }
            final long now = System.nanoTime();
            if (terminal) {
                if (now - drawnNs > 200_000_000L || min == total) {
                    drawnNs = now;
                    draw(min);
                }
            } else {
                final int tenth = (int) (10L * min / total);
                if (tenth > printedTenth) {
                    printedTenth = tenth;
                    out.println(line(min));
                    out.flush();
                }
            }
        }

        synchronized void evaluated(final int w, final String line) {
            final int at = line.indexOf("accuracy ");
            if (w == 0 && at >= 0) {
                accuracy = line.substring(at + "accuracy ".length()).trim();
            }
        }

        synchronized void println(final String line) {
            if (drawn) {
                out.print("\r\033[K");
            }
            out.println(line);
            if (drawn) {
                draw(-1);
            }
            out.flush();
        }

        synchronized void finish() {
            if (drawn) {
                out.print("\r\033[K");
                out.flush();
                drawn = false;
            }
        }

        private void draw(final int minRound) {
            int min = minRound;
            if (min < 0) {
                min = Integer.MAX_VALUE;
                for (final int r : rounds) {
                    min = Math.min(min, r);
                }
            }
            out.print("\r\033[K" + line(min));
            out.flush();
            drawn = true;
        }

        private String line(final int min) {
            int max = 0;
            for (final int r : rounds) {
                max = Math.max(max, r);
            }
            final int width = 24;
            final int filled = total == 0 ? width : (int) ((long) width * min / total);
            return String.format(Locale.ROOT, "[%s%s] round %d/%d (fastest %d)  loss %.4f  accuracy %s  %.1f s",
                "#".repeat(filled), ".".repeat(width - filled), min, total, max, loss, accuracy, (System.nanoTime() - startNs) / 1e9);
        }
    }
}
