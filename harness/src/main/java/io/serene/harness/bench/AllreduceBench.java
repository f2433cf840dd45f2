package io.serene.harness.bench;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.training.Json;
import io.serene.transport.FaultInjector;
import io.serene.transport.PacketHost;
import io.serene.transport.UdpHost;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerCounter;

import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * End-to-end allreduce benchmark over UDP on 127.0.0.1 or over shared memory: one switch and N
 * workers, each on its own socket or ring, in this process (the switch on one thread, the workers
 * sharing another, or more of them, one per worker at most, as separate processes would have:
 * {@code --worker-threads}). In the same run, round by round, it measures a raw echo through the same
 * topology, link, threads and batching (the baseline): each round runs both, in alternating order,
 * so both see the same machine. It reports the ratio of the two goodputs.
 */
public final class AllreduceBench {
    /** What to run; immutable. */
    public static final class Config {
        int workers = 4;
        int elements = 1_000_000;
        int rounds = 5;
        int warmupRounds = 10;
        double loss;
        long seed = 7;
        int chunkElements = SwitchContext.DEFAULT_CHUNK_ELEMENTS;
        long budgetBytes = SwitchContext.DEFAULT_BUDGET_BYTES;
        int window = 256;
        boolean preferEpoll = true;
        boolean gso = true;
        boolean gro = true;
        boolean shm;
        long timeoutSeconds = 300;
        /** Threads the workers (and the echo's clients) are spread over; 0: one per worker. */
        int workerThreads = 1;

        /** Shared memory (a worker on the switch's host) instead of UDP on 127.0.0.1. */
        public Config shm(final boolean enabled) {
            shm = enabled;
            return this;
        }

        public Config workers(final int n) {
            workers = n;
            return this;
        }

        public Config elements(final int n) {
            elements = n;
            return this;
        }

        public Config rounds(final int n) {
            rounds = n;
            return this;
        }

        public Config warmupRounds(final int n) {
            warmupRounds = n;
            return this;
        }

        public Config loss(final double rate) {
            loss = rate;
            return this;
        }

        public Config seed(final long s) {
            seed = s;
            return this;
        }

        public Config chunkElements(final int k) {
            chunkElements = k;
            return this;
        }

        public Config budgetBytes(final long bytes) {
            budgetBytes = bytes;
            return this;
        }

        public Config window(final int steps) {
            window = steps;
            return this;
        }

        public Config preferEpoll(final boolean epoll) {
            preferEpoll = epoll;
            return this;
        }

        public Config gso(final boolean enabled) {
            gso = enabled;
            return this;
        }

        public Config gro(final boolean enabled) {
            gro = enabled;
            return this;
        }

        /** Threads the workers are spread over (0: one per worker, as separate processes have). */
        public Config workerThreads(final int threads) {
            workerThreads = threads;
            return this;
        }

        /** The threads the workers run on: one per worker unless fewer are asked for. */
        int threadsForWorkers() {
            return workerThreads == 0 ? workers : Math.min(workerThreads, workers);
        }

        public Config timeoutSeconds(final long seconds) {
            timeoutSeconds = seconds;
            return this;
        }

        void validate() {
            require(workers >= 1 && workers <= 64, "--workers must be in 1..64, was " + workers);
            require(elements >= 1, "--elements must be >= 1, was " + elements);
            require(rounds >= 1, "--rounds must be >= 1, was " + rounds);
            require(warmupRounds >= 0, "--warmup must be >= 0, was " + warmupRounds);
            require(loss >= 0 && loss < 0.5, "--loss must be in [0, 0.5), was " + loss);
            require(window >= 1, "--window must be >= 1, was " + window);
            require(workerThreads >= 0, "--worker-threads must be >= 0 (0: one per worker), was " + workerThreads);
        }

        private static void require(final boolean ok, final String message) {
            if (!ok) {
                throw new IllegalArgumentException(message);
            }
        }
    }

    /** What a run measured. */
    public static final class Result {
        public boolean exact;
        public double maxAbsError;
        public double maxErrorBound;
        public double elementsPerSecond;
        public double rawEchoElementsPerSecond;
        public double ratio;
        public long seed;
        public String transport;
        public boolean gso;
        public int poolSize;
        public long retransmissions;
        public long switchDuplicates;
        public String memory;
        public double switchBusy;
        public double workerBusy;
        /** Processor time of a measured aggregation round: the switch's, the workers' and the caller's threads (ms). */
        public double cpuMsPerRound;
        /** Processor time of a measured round of the raw echo: its server's and clients' threads (ms). */
        public double echoCpuMsPerRound;

        /**
         * The most elements a second the aggregation's processor time would allow if it kept every
         * one of the host's cores busy: above the measured goodput by what the round leaves idle.
         */
        public double cpuBoundElementsPerSecond(final int elements) {
            return elements * CORES / (cpuMsPerRound / 1e3);
        }

        public Map<String, Object> toJson(final Config config) {
            final Map<String, Object> m = new LinkedHashMap<>();
            m.put("schemaVersion", Json.SCHEMA_VERSION);
            m.put("exact", exact);
            m.put("maxAbsError", maxAbsError);
            m.put("elementsPerSecond", elementsPerSecond);
            m.put("rawEchoElementsPerSecond", rawEchoElementsPerSecond);
            m.put("ratio", ratio);
            m.put("seed", seed);
            m.put("workers", config.workers);
            m.put("elements", config.elements);
            m.put("rounds", config.rounds);
            m.put("loss", config.loss);
            m.put("chunkElements", config.chunkElements);
            m.put("poolSize", poolSize);
            m.put("window", Math.min(config.window, poolSize));
            m.put("workerThreads", config.threadsForWorkers());
            m.put("transport", transport);
            m.put("gso", gso);
            m.put("retransmissions", retransmissions);
            m.put("switchDuplicates", switchDuplicates);
            m.put("maxErrorBound", maxErrorBound);
            m.put("cpuMsPerRound", cpuMsPerRound);
            m.put("echoCpuMsPerRound", echoCpuMsPerRound);
            m.put("cores", CORES);
            return m;
        }
    }

    /** The processors this host gives the process: what a run's processor time is spread over. */
    public static final int CORES = Runtime.getRuntime().availableProcessors();

    private AllreduceBench() {
    }

    public static Result run(final Config config, final PrintStream progress) throws Exception {
        config.validate();
        final Result result = new Result();
        result.seed = config.seed;
        final SwitchContext switchContext = new SwitchContext()
            .budgetBytes(config.budgetBytes)
            .chunkElements(config.chunkElements)
            .maxWorkers(config.workers)
            .conclude();
        result.memory = switchContext.memory().toString();
        result.poolSize = switchContext.memory().poolSize();
        progress.println(result.memory);

        final FaultInjector faults = new FaultInjector(config.seed, config.loss, 0, 0);
        try (Links links = new Links(config);
             Aggregation aggregation = new Aggregation(config, switchContext, links, faults);
             Echo echo = new Echo(config, switchContext, links, faults)) {
            result.transport = aggregation.switchHost.kind();
            result.gso = aggregation.workers.get(0).host() instanceof UdpHost udp && udp.usesGso();
            final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            final long switchThread = aggregation.switchHost.call(() -> Thread.currentThread().getId()).get();
            // the workers' threads (and the echo clients'): one per worker, or as many as --worker-threads says
            final long[] workerThreads = workerThreadIds(aggregation);
            final SplittableRandom random = new SplittableRandom(config.seed);
            final Verifier verifier = new Verifier(config);
            long aggregateNs = 0;
            long echoNs = 0;
            long switchCpuNs = 0;
            long workerCpuNs = 0;
            long echoCpuNs = 0;
            long callerCpuNs = 0;
            for (int round = 0; round < config.warmupRounds + config.rounds; round++) {
                fill(verifier.gradients, random);
                final boolean measured = round >= config.warmupRounds;
                long echoRoundNs = 0;
                long echoCpu0 = threads.getThreadCpuTime(switchThread) + cpuNs(threads, workerThreads);
                if (round % 2 == 0) {
                    echoRoundNs = echo.round(config.timeoutSeconds);
                }
                long echoCpu = threads.getThreadCpuTime(switchThread) + cpuNs(threads, workerThreads) - echoCpu0;
                final long switchCpu0 = threads.getThreadCpuTime(switchThread);
                final long workerCpu0 = cpuNs(threads, workerThreads);
                // the caller hands the gradients over (and scans their chunk exponents) on this thread
                final long callerCpu0 = threads.getCurrentThreadCpuTime();
                final List<Aggregate> aggregates = new ArrayList<>();
                final long aggregateRoundNs = aggregation.round(round, verifier.gradients, aggregates, progress);
                final long callerCpu = threads.getCurrentThreadCpuTime() - callerCpu0;
                final long switchCpu = threads.getThreadCpuTime(switchThread) - switchCpu0;
                final long workerCpu = cpuNs(threads, workerThreads) - workerCpu0;
                if (round % 2 == 1) {
                    echoCpu0 = threads.getThreadCpuTime(switchThread) + cpuNs(threads, workerThreads);
                    echoRoundNs = echo.round(config.timeoutSeconds);
                    echoCpu = threads.getThreadCpuTime(switchThread) + cpuNs(threads, workerThreads) - echoCpu0;
                }
                final boolean exact = verifier.check(aggregates);
                aggregates.forEach(Aggregate::release);
                if (measured) {
                    aggregateNs += aggregateRoundNs;
                    echoNs += echoRoundNs;
                    switchCpuNs += switchCpu;
                    workerCpuNs += workerCpu;
                    callerCpuNs += callerCpu;
                    echoCpuNs += echoCpu;
                }
                progress.printf("%s round %d: aggregation %.1f ms (exact=%s), raw echo %.1f ms%n",
                    measured ? "measured" : "warm-up", round, aggregateRoundNs / 1e6, exact, echoRoundNs / 1e6);
            }
            result.exact = verifier.exact && aggregation.errors.isEmpty();
            result.maxAbsError = verifier.maxError;
            result.maxErrorBound = verifier.maxBound;
            result.switchBusy = (double) switchCpuNs / aggregateNs;
            result.workerBusy = (double) workerCpuNs / aggregateNs;
            result.cpuMsPerRound = (switchCpuNs + workerCpuNs + callerCpuNs) / 1e6 / config.rounds;
            result.echoCpuMsPerRound = echoCpuNs / 1e6 / config.rounds;
            final double totalElements = (double) config.elements * config.rounds;
            result.elementsPerSecond = totalElements / (aggregateNs / 1e9);
            result.rawEchoElementsPerSecond = totalElements / (echoNs / 1e9);
            result.ratio = result.elementsPerSecond / result.rawEchoElementsPerSecond;
            aggregation.report(result, progress);
            progress.println("switch link: " + aggregation.switchHost.batchingStats());
            progress.println("worker 0 link: " + aggregation.workers.get(0).host().batchingStats());
            progress.println("echo server link: " + echo.server.batchingStats());
            progress.println("echo client 0 link: " + echo.hosts.get(0).batchingStats());
            progress.printf("event loop threads busy during measured aggregation: switch %.0f%%, workers %.0f%% (%d threads, together); "
                + "CPU per round: aggregation %.1f ms (%.1f of it the caller's), raw echo %.1f ms%n", 100 * result.switchBusy,
                100 * result.workerBusy, workerThreads.length, result.cpuMsPerRound, callerCpuNs / 1e6 / config.rounds,
                result.echoCpuMsPerRound);
        }
        return result;
    }

    /** The distinct threads the workers' hosts run on. */
    private static long[] workerThreadIds(final Aggregation aggregation) throws Exception {
        final TreeSet<Long> ids = new TreeSet<>();
        for (final WorkerHost worker : aggregation.workers) {
            ids.add(worker.host().call(() -> Thread.currentThread().getId()).get());
        }
        return ids.stream().mapToLong(Long::longValue).toArray();
    }

    /** CPU time of these threads together (ns). */
    private static long cpuNs(final ThreadMXBean threads, final long[] ids) {
        long sum = 0;
        for (final long id : ids) {
            sum += threads.getThreadCpuTime(id);
        }
        return sum;
    }

    /** The switch and the workers, joined and ready for rounds. */
    private static final class Aggregation implements AutoCloseable {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline;
        final PacketHost switchHost;
        final List<WorkerHost> workers = new ArrayList<>();
        final Config config;

        Aggregation(final Config config, final SwitchContext switchContext, final Links links,
                    final FaultInjector faults) throws Exception {
            this.config = config;
            pipeline = new SwitchPipeline(switchContext, errors::add);
            switchHost = links.serve(pipeline, faults.fork(1_000));
            for (int w = 0; w < config.workers; w++) {
                workers.add(links.worker(new WorkerContext().jobId(1).workerId(w).workers(config.workers)
                    .elementsPerRound(config.elements).maxWindow(config.window), switchHost, faults.fork(w), errors));
            }
            for (final WorkerHost worker : workers) {
                try {
                    worker.joined().get(30, TimeUnit.SECONDS);
                } catch (final ExecutionException ex) {
                    final Throwable transportError = switchHost.lastError() != null ? switchHost.lastError()
                        : worker.host().lastError();
                    if (transportError != null) {
                        throw new IllegalStateException(ex.getCause().getMessage() + " (transport error: " + transportError + ")",
                            transportError);
                    }
                    throw ex;
                }
            }
        }

        /** Runs one round on every worker; returns its wall time and adds the aggregates to {@code out}. */
        long round(final int round, final float[][] gradients, final List<Aggregate> out, final PrintStream progress)
            throws Exception {
            final List<CompletableFuture<Aggregate>> futures = new ArrayList<>();
            final long start = System.nanoTime();
            for (int w = 0; w < config.workers; w++) {
                futures.add(workers.get(w).allreduce(round, gradients[w]));
            }
            try {
                CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]))
                    .get(config.timeoutSeconds, TimeUnit.SECONDS);
            } catch (final TimeoutException ex) {
                progress.println("switch counters: " + switchHost.call(() -> pipeline.counters().toString()).get());
                for (int w = 0; w < config.workers; w++) {
                    progress.println("worker " + w + ": " + workers.get(w).call(e -> e.counters() + ", " + e.debugState()).get());
                }
                throw new IllegalStateException("round " + round + " did not complete in " + config.timeoutSeconds + " s");
            }
            final long elapsed = System.nanoTime() - start;
            for (final CompletableFuture<Aggregate> f : futures) {
                out.add(f.get());
            }
            return elapsed;
        }

        void report(final Result result, final PrintStream progress) throws Exception {
            for (final WorkerHost worker : workers) {
                result.retransmissions += worker.call(e -> e.counters().get(WorkerCounter.RETRANSMISSIONS)
                    + e.counters().get(WorkerCounter.FAST_RETRANSMISSIONS)).get();
            }
            result.switchDuplicates = switchHost.call(() -> pipeline.counters().get(SwitchCounter.DUPLICATES)).get();
            progress.println("switch counters: " + switchHost.call(() -> pipeline.counters().toString()).get());
            progress.println("worker 0 counters: " + workers.get(0).counters());
            if (!errors.isEmpty()) {
                progress.println("errors: " + errors);
            }
        }

        @Override
        public void close() {
            workers.forEach(WorkerHost::close);
            switchHost.close();
        }
    }

    static void fill(final float[][] gradients, final SplittableRandom random) {
        for (final float[] g : gradients) {
            final double magnitude = Math.scalb(1.0, random.nextInt(-12, 4));
            for (int i = 0; i < g.length; i++) {
                g[i] = (float) (random.nextGaussian() * magnitude);
            }
        }
    }
}
