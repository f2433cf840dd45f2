package io.serene.harness.bench;

import com.sun.management.OperatingSystemMXBean;
import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.launch.XdpPlane;
import io.serene.node.SwitchNode;
import io.serene.training.Json;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerNode;
import io.serene.xdp.XdpDimensions;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * {@code serene bench allreduce --switch xdp}: the XDP switch and N worker processes, each in its network
 * namespace behind a port of it, every round checked exactly by every worker (the inputs are drawn once from the
 * seed alike in every process, as {@link AllreduceBench} draws them, and kept, as gloo's are). A round's time runs from its last
 * worker's start to its last worker's result; its processor time is what the worker processes spent in
 * their allreduce calls, where the kernel's program runs too (in their sends' softirq).
 */
public final class XdpAllreduce {
    private XdpAllreduce() {
    }

    /** A worker's line for a round: when its allreduce call began and ended (this host's monotonic clock), its processor time, its check. */
    public record RoundLine(int round, long startNs, long endNs, long cpuNs, boolean exact, double maxError, double maxBound) {
    }

    public static AllreduceBench.Result run(final AllreduceBench.Config config, final PrintStream progress) throws Exception {
        config.validate();
        if (config.chunkElements > XdpDimensions.MAX_CHUNK_ELEMENTS) {
            throw new IllegalArgumentException("--switch xdp takes --chunk-elements up to " + XdpDimensions.MAX_CHUNK_ELEMENTS
                + ", was " + config.chunkElements);
        }
        final SwitchContext context = new SwitchContext().budgetBytes(config.budgetBytes).chunkElements(config.chunkElements)
            .maxWorkers(config.workers).conclude();
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(context, errors::add);
        final AllreduceBench.Result result = new AllreduceBench.Result();
        result.seed = config.seed;
        result.transport = "xdp";
        result.poolSize = context.memory().poolSize();
        progress.println(context.memory());
        try (XdpPlane xdp = XdpPlane.create(config.workers);
             SwitchNode node = xdp.serve(SwitchNode.builder(pipeline), progress::println, errors::add).open()) {
            node.start();
            final List<Process> processes = new ArrayList<>();
            final List<List<String>> output = new ArrayList<>();
            final List<Thread> readers = new ArrayList<>();
            for (int w = 0; w < config.workers; w++) {
                final Process p = new ProcessBuilder(XdpPlane.command(xdp, w, workerCommand(config, node.address(), w)))
                    .redirectErrorStream(true).start();
                final List<String> lines = Collections.synchronizedList(new ArrayList<>());
                final Thread reader = new Thread(() -> read(p, lines), "bench-worker-" + w);
                reader.start();
                processes.add(p);
                output.add(lines);
                readers.add(reader);
            }
            final long deadlineMs = System.currentTimeMillis() + 1000L * config.timeoutSeconds;
            for (int w = 0; w < config.workers; w++) {
                final Process p = processes.get(w);
                if (!p.waitFor(Math.max(1, deadlineMs - System.currentTimeMillis()), TimeUnit.MILLISECONDS)) {
                    processes.forEach(Process::destroyForcibly);
                    throw new IllegalStateException("worker " + w + " did not finish in " + config.timeoutSeconds + " s: " + tail(output.get(w)));
                }
                readers.get(w).join(10_000);
                if (p.exitValue() != 0) {
                    throw new IllegalStateException("worker " + w + " failed (exit " + p.exitValue() + "): " + tail(output.get(w)));
                }
            }
            measure(config, output, result);
            result.exact &= errors.isEmpty();
            final Map<String, Long> counters = XdpPlane.counters(xdp, node);
            result.switchDuplicates = counters.getOrDefault("DUPLICATES", 0L);
            progress.println("XDP switch counters: " + counters);
            if (!errors.isEmpty()) {
                progress.println("errors: " + errors);
            }
        }
        return result;
    }

    /** Per measured round: from the last worker's start to the last worker's result; processor time summed over the workers. */
    private static void measure(final AllreduceBench.Config config, final List<List<String>> output, final AllreduceBench.Result result) {
        final int total = config.warmupRounds + config.rounds;
        final long[] start = new long[total];
        final long[] end = new long[total];
        final long[] cpu = new long[total];
        boolean exact = true;
        for (final List<String> lines : output) {
            int seen = 0;
            for (final String line : lines) {
                if (!line.startsWith("{")) {
                    continue;
                }
                final RoundLine r = Json.read(line, RoundLine.class);
                start[r.round()] = Math.max(start[r.round()], r.startNs());
                end[r.round()] = Math.max(end[r.round()], r.endNs());
                cpu[r.round()] += r.cpuNs();
                exact &= r.exact();
                result.maxAbsError = Math.max(result.maxAbsError, r.maxError());
                result.maxErrorBound = Math.max(result.maxErrorBound, r.maxBound());
                seen++;
            }
            if (seen != total) {
                throw new IllegalStateException("a worker reported " + seen + " of " + total + " rounds: " + tail(lines));
            }
        }
        long ns = 0;
        long cpuNs = 0;
        for (int round = config.warmupRounds; round < total; round++) {
            ns += end[round] - start[round];
            cpuNs += cpu[round];
        }
        result.exact = exact;
        result.elementsPerSecond = (double) config.elements * config.rounds / (ns / 1e9);
        result.cpuMsPerRound = cpuNs / 1e6 / config.rounds;
    }

    private static List<String> workerCommand(final AllreduceBench.Config config, final String address, final int w) {
        final String java = ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java");
        return List.of(java, "-Xmx1g", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), "io.serene.harness.cli.Serene",
            "bench", "xdp-worker", "--switch", address, "--id", "" + w, "--workers", "" + config.workers, "--elements",
            "" + config.elements, "--rounds", "" + config.rounds, "--warmup", "" + config.warmupRounds, "--seed", "" + config.seed,
            "--window", "" + config.window, "--timeout", "" + config.timeoutSeconds);
    }

    private static byte[] exponents(final Aggregate a) {
        final byte[] e = new byte[a.chunks()];
        for (int c = 0; c < e.length; c++) {
            e[c] = a.exponent(c);
        }
        return e;
    }

    private static void read(final Process p, final List<String> lines) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                lines.add(line);
            }
        } catch (final IOException ignored) {
            // the process ended
        }
    }

    private static String tail(final List<String> lines) {
        synchronized (lines) {
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 5), lines.size()));
        }
    }

    /**
     * One worker of the bench ({@code serene bench xdp-worker}): joins, runs the rounds on inputs drawn once from the
     * seed as every worker draws them, checks the first aggregate exactly and every later one bitwise against it, and
     * prints a JSON line a round (its start and end on this host's monotonic clock, the processor time of its
     * allreduce call, whether it was exact).
     */
    public static int worker(final String switchAddress, final int id, final AllreduceBench.Config config, final PrintStream out)
        throws Exception {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (WorkerNode node = WorkerNode.to("--switch", switchAddress);
             WorkerHost host = node.connect(new WorkerContext().jobId(1).workerId(id).workers(config.workers)
                 .elementsPerRound(config.elements).maxWindow(config.window), errors::add)) {
            node.awaitJoin(host, id, 1, (int) Math.min(Integer.MAX_VALUE, config.timeoutSeconds));
            // the inputs are drawn once, as gloo's are fixed: the same exact aggregate every round
            final Verifier verifier = new Verifier(config);
            AllreduceBench.fill(verifier.gradients, new SplittableRandom(config.seed));
            int[] sums = null;
            byte[] exponents = null;
            for (int round = 0; round < config.warmupRounds + config.rounds; round++) {
                final long cpu0 = os.getProcessCpuTime();
                final long start = System.nanoTime();
                final Aggregate a = host.allreduce(round, verifier.gradients[id]).get(config.timeoutSeconds, TimeUnit.SECONDS);
                final long end = System.nanoTime();
                final long cpu = os.getProcessCpuTime() - cpu0;
                final boolean exact;
                if (sums == null) {
                    // the first, element by element against the exact integer sums of the quantized inputs
                    exact = verifier.check(List.of(a));
                    sums = a.integerSums().clone();
                    exponents = exponents(a);
                } else {
                    // every later one bitwise against the first (checking each in full here would take the cores the others' rounds need)
                    exact = a.contributorCount() == config.workers && Arrays.equals(a.integerSums(), sums)
                        && Arrays.equals(exponents(a), exponents);
                    verifier.exact &= exact;
                }
                a.release();
                out.println(Json.write(new RoundLine(round, start, end, cpu, exact, verifier.maxError, verifier.maxBound)));
            }
            out.flush();
            if (!errors.isEmpty()) {
                out.println("errors: " + errors);
                return 1;
            }
            return verifier.exact ? 0 : 1;
        }
    }
}
