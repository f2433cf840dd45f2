package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.PacketFlyweight;
import io.serene.transport.FaultInjector;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.Aggregate;
import io.serene.worker.BlockFloat;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerEngine;

import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * End-to-end allreduce benchmark over UDP on 127.0.0.1: one switch and N workers, each on its
 * own socket, in this process (the switch on one event loop thread, the workers sharing another).
 * In the same run it measures a raw UDP echo through the same topology, sockets and batching (the
 * baseline), and reports the ratio of the two goodputs.
 */
public final class AllreduceBench {
    /** What to run; immutable. */
    public static final class Config {
        int workers = 4;
        int elements = 1_000_000;
        int rounds = 5;
        int warmupRounds = 1;
        double loss;
        long seed = 7;
        int chunkElements = SwitchContext.DEFAULT_CHUNK_ELEMENTS;
        long budgetBytes = SwitchContext.DEFAULT_BUDGET_BYTES;
        int window = 1024;
        boolean preferEpoll = true;
        boolean gso = true;
        boolean gro = true;
        long timeoutSeconds = 300;

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
        public long injectedLosses;
        public String memory;
        public double switchBusy;
        public double workerBusy;

        public Map<String, Object> toJson(final Config config) {
            final Map<String, Object> m = new LinkedHashMap<>();
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
            m.put("transport", transport);
            m.put("gso", gso);
            m.put("retransmissions", retransmissions);
            m.put("switchDuplicates", switchDuplicates);
            m.put("injectedLosses", injectedLosses);
            m.put("maxErrorBound", maxErrorBound);
            return m;
        }
    }

    private AllreduceBench() {
    }

    public static Result run(final Config config, final PrintStream progress) throws Exception {
        config.validate();
        final Result result = new Result();
        result.seed = config.seed;
        final SwitchContext switchContext = new SwitchContext()
            .budgetBytes(config.budgetBytes)
            .chunkElements(config.chunkElements)
            .maxWorkers(Math.max(config.workers, 1))
            .conclude();
        result.memory = switchContext.memory().toString();
        result.poolSize = switchContext.memory().poolSize();
        progress.println(result.memory);

        final FaultInjector faults = new FaultInjector(config.seed, config.loss, 0, 0);
        try (UdpTransport switchLoop = UdpTransport.create(1, config.preferEpoll);
             UdpTransport workerLoop = UdpTransport.create(Integer.getInteger("serene.workerThreads", 1), config.preferEpoll)) {
            result.transport = switchLoop.kind();
            final UdpOptions base = UdpOptions.defaults().gso(config.gso).gro(config.gro);
            final long aggregateNs = runAggregation(config, switchContext, switchLoop, workerLoop, base, faults,
                result, progress);
            final long echoNs = runEcho(config, switchContext, switchLoop, workerLoop, base, progress);
            final double totalElements = (double) config.elements * config.rounds;
            result.elementsPerSecond = totalElements / (aggregateNs / 1e9);
            result.rawEchoElementsPerSecond = totalElements / (echoNs / 1e9);
            result.ratio = result.elementsPerSecond / result.rawEchoElementsPerSecond;
        }
        return result;
    }

    private static long runAggregation(final Config config, final SwitchContext switchContext,
                                       final UdpTransport switchLoop, final UdpTransport workerLoop,
                                       final UdpOptions base, final FaultInjector faults, final Result result,
                                       final PrintStream progress) throws Exception {
        final List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(switchContext, errors::add);
        final UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0),
            base.faults(faults.fork(1_000)));
        final int n = config.workers;
        final List<WorkerEngine> engines = new ArrayList<>();
        final List<UdpHost> hosts = new ArrayList<>();
        try {
            for (int w = 0; w < n; w++) {
                final WorkerEngine engine = new WorkerEngine(new WorkerContext()
                    .jobId(1).workerId(w).workers(n).elementsPerRound(config.elements)
                    .switchPort(0).maxWindow(config.window), errors::add);
                final UdpHost host = workerLoop.bind(engine, new InetSocketAddress("127.0.0.1", 0),
                    base.faults(faults.fork(w)));
                host.addPeer(switchHost.localAddress());
                engines.add(engine);
                hosts.add(host);
            }
            for (final WorkerEngine engine : engines) {
                engine.joined().get(30, TimeUnit.SECONDS);
            }
            result.gso = hosts.get(0).usesGso();
            final int q = BlockFloat.scaleBits(n);
            final SplittableRandom random = new SplittableRandom(config.seed);
            final float[][] gradients = new float[n][config.elements];
            final float[] sum = new float[config.elements];
            final java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
            final long switchThread = switchHost.call(() -> Thread.currentThread().getId()).get();
            final long workerThread = hosts.get(0).call(() -> Thread.currentThread().getId()).get();
            long switchCpuNs = 0;
            long workerCpuNs = 0;
            long totalNs = 0;
            boolean exact = true;
            double maxError = 0;
            double maxBound = 0;
            for (int round = 0; round < config.warmupRounds + config.rounds; round++) {
                fill(gradients, random);
                final List<CompletableFuture<Aggregate>> futures = new ArrayList<>();
                for (int w = 0; w < n; w++) {
                    futures.add(null);
                }
                final long start = System.nanoTime();
                final long switchCpu0 = threads.getThreadCpuTime(switchThread);
                final long workerCpu0 = threads.getThreadCpuTime(workerThread);
                for (int w = 0; w < n; w++) {
                    final int worker = w;
                    final int r = round;
                    final float[] g = gradients[w];
                    futures.set(w, hosts.get(w).call(() -> engines.get(worker).allreduce(r, g))
                        .thenCompose(f -> f));
                }
                try {
                    CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]))
                        .get(config.timeoutSeconds, TimeUnit.SECONDS);
                } catch (final TimeoutException ex) {
                    progress.println("switch counters: " + switchHost.call(() -> pipeline.counters().toString()).get());
                    for (int w = 0; w < n; w++) {
                        final WorkerEngine engine = engines.get(w);
                        progress.println("worker " + w + " counters: " + hosts.get(w).call(() -> engine.counters().toString()
                            + ", " + engine.debugState()).get());
                    }
                    throw new IllegalStateException("round " + round + " did not complete in " + config.timeoutSeconds + " s");
                }
                final long elapsed = System.nanoTime() - start;
                final boolean measured = round >= config.warmupRounds;
                if (measured) {
                    totalNs += elapsed;
                    switchCpuNs += threads.getThreadCpuTime(switchThread) - switchCpu0;
                    workerCpuNs += threads.getThreadCpuTime(workerThread) - workerCpu0;
                }
                final Aggregate first = futures.get(0).get();
                boolean roundExact = true;
                for (final CompletableFuture<Aggregate> f : futures) {
                    roundExact &= java.util.Arrays.equals(f.get().integerSums(), first.integerSums())
                        && first.contributorCount() == n;
                }
                final int k = first.chunkElements();
                first.sumInto(sum);
                for (int i = 0; i < config.elements; i++) {
                    final int exponent = first.exponent(i / k);
                    int expected = 0;
                    double real = 0;
                    for (int w = 0; w < n; w++) {
                        expected += BlockFloat.quantize(gradients[w][i], exponent, q);
                        real += gradients[w][i];
                    }
                    roundExact &= expected == first.integerSums()[i];
                    maxError = Math.max(maxError, Math.abs(sum[i] - real));
                    maxBound = Math.max(maxBound, BlockFloat.errorBound(n, exponent) + Math.ulp((float) real));
                }
                exact &= roundExact;
                for (final CompletableFuture<Aggregate> f : futures) {
                    f.get().release();
                }
                progress.printf("%s round %d: %.1f ms, exact=%s%n", measured ? "aggregation" : "warm-up", round,
                    elapsed / 1e6, roundExact);
            }
            result.exact = exact && errors.isEmpty();
            result.switchBusy = (double) switchCpuNs / totalNs;
            result.workerBusy = (double) workerCpuNs / totalNs;
            progress.printf("event loop threads busy during measured rounds: switch %.0f%%, workers %.0f%%%n",
                100 * result.switchBusy, 100 * result.workerBusy);
            result.maxAbsError = maxError;
            result.maxErrorBound = maxBound;
            for (final WorkerEngine engine : engines) {
                result.retransmissions += engine.counters().get(io.serene.worker.WorkerCounter.RETRANSMISSIONS);
            }
            result.switchDuplicates = switchHost.call(
                () -> pipeline.counters().get(io.serene.dataplane.SwitchCounter.DUPLICATES)).get();
            if (!errors.isEmpty()) {
                progress.println("errors: " + errors);
            }
            progress.println("switch counters: " + switchHost.call(() -> pipeline.counters().toString()).get());
            progress.println("worker 0 counters: " + hosts.get(0).call(() -> engines.get(0).counters().toString()).get()
                + ", rto " + engines.get(0).rtoNs() / 1000 + " us, srtt " + engines.get(0).srttNs() / 1000 + " us");

            progress.println("socket errors: switch " + switchHost.errors() + " " + switchHost.lastError()
                + ", worker 0 " + hosts.get(0).errors() + " " + hosts.get(0).lastError());
            for (int w = 0; w < n; w++) {
                final int worker = w;
                hosts.get(w).call(() -> engines.get(worker).leave()).thenCompose(f -> f).get(10, TimeUnit.SECONDS);
            }
            return totalNs;
        } finally {
            for (final UdpHost host : hosts) {
                host.close();
            }
            switchHost.close();
        }
    }

    private static long runEcho(final Config config, final SwitchContext switchContext, final UdpTransport switchLoop,
                                final UdpTransport workerLoop, final UdpOptions base, final PrintStream progress)
        throws Exception {
        final UdpHost server = switchLoop.bind(new EchoEndpoint(), new InetSocketAddress("127.0.0.1", 0), base);
        final List<EchoClient> clients = new ArrayList<>();
        final List<UdpHost> hosts = new ArrayList<>();
        final int k = switchContext.chunkElements();
        final int chunks = (config.elements + k - 1) / k;
        final int window = Math.min(config.window, switchContext.memory().poolSize());
        try {
            for (int w = 0; w < config.workers; w++) {
                final EchoClient client = new EchoClient(0, PacketFlyweight.dataLength(k), window);
                final UdpHost host = workerLoop.bind(client, new InetSocketAddress("127.0.0.1", 0), base);
                host.addPeer(server.localAddress());
                clients.add(client);
                hosts.add(host);
            }
            long totalNs = 0;
            for (int round = 0; round < config.warmupRounds + config.rounds; round++) {
                final List<CompletableFuture<Void>> futures = new ArrayList<>();
                final long start = System.nanoTime();
                for (int w = 0; w < config.workers; w++) {
                    final EchoClient client = clients.get(w);
                    futures.add(hosts.get(w).call(() -> client.start(chunks)).thenCompose(f -> f));
                }
                try {
                    CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0]))
                        .get(config.timeoutSeconds, TimeUnit.SECONDS);
                } catch (final TimeoutException ex) {
                    throw new IllegalStateException("raw echo baseline did not finish in " + config.timeoutSeconds + " s");
                }
                final long elapsed = System.nanoTime() - start;
                final boolean measured = round >= config.warmupRounds;
                if (measured) {
                    totalNs += elapsed;
                }
                progress.printf("%s round %d: %.1f ms%n", measured ? "raw echo" : "echo warm-up", round, elapsed / 1e6);
            }
            return totalNs;
        } finally {
            for (final UdpHost host : hosts) {
                host.close();
            }
            server.close();
        }
    }

    private static void fill(final float[][] gradients, final SplittableRandom random) {
        for (final float[] g : gradients) {
            final double magnitude = Math.scalb(1.0, random.nextInt(-12, 4));
            for (int i = 0; i < g.length; i++) {
                g[i] = (float) (random.nextGaussian() * magnitude);
            }
        }
    }
}
