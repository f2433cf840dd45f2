package io.serene.harness.cli;

import io.serene.harness.bench.AllreduceBench;
import io.serene.harness.bench.GlooBaseline;
import io.serene.harness.bench.XdpAllreduce;
import io.serene.launch.RunSettings;
import io.serene.training.Json;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code serene bench allreduce}: the end-to-end aggregation benchmark against a raw echo over the same link, or PyTorch's gloo. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks.",
    subcommands = {BenchCommand.Allreduce.class, BenchCommand.XdpWorker.class})
public final class BenchCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "allreduce", mixinStandardHelpOptions = true,
        description = {
            "Runs one switch and N workers over shared-memory rings, as workers on the switch's host use (or, with --link "
                + "udp, over UDP on 127.0.0.1), all in this process: the workers are threads, not processes "
                + "(each with its own socket or ring; the switch runs on one thread and the workers share a second one, or more: --worker-threads).",
            "Checks that every worker received the exact integer sum of all quantized inputs (bitwise, all "
                + "workers equal) and measures the aggregation goodput, then, in the same run, the goodput of a raw "
                + "echo through the same topology, link, threads and batching, and reports their ratio.",
            "Aggregation and echo alternate round by round, under the same injected loss (applied to every "
                + "packet any of them sends) and the same loss recovery.",
            "Also prints the processor time a round of both sides (Serene's switch, worker and caller threads; the "
                + "echo's threads, or all of gloo's processes) and the goodput the aggregation's would allow with every core busy."})
    static final class Allreduce implements Callable<Integer> {
        @Option(names = "--workers", defaultValue = "4", description = "Workers (1-64). Default: ${DEFAULT-VALUE}.")
        int workers;

        @Option(names = "--elements", defaultValue = "1000000", description = "Gradient elements per round. Default: ${DEFAULT-VALUE}.")
        int elements;

        @Option(names = "--rounds", defaultValue = "10", description = "Measured rounds. Default: ${DEFAULT-VALUE}.")
        int rounds;

        @Option(names = "--warmup", defaultValue = "40", description = "Unmeasured warm-up rounds: enough for the JIT to settle "
            + "(with 10 warm-up and 5 measured rounds the defaults measured 0.52-0.56x gloo here, with these 0.71-0.84x). "
            + "Default: ${DEFAULT-VALUE}.")
        int warmup;

        @Option(names = "--loss", defaultValue = "0", description = "Injected packet loss rate in [0, 0.5). Default: ${DEFAULT-VALUE}.")
        double loss;

        @Option(names = "--seed", defaultValue = "7", description = "Seed of inputs and loss. Default: ${DEFAULT-VALUE}.")
        long seed;

        @Option(names = "--chunk-elements", description = "Elements per packet (K): 8192, the most a software "
            + "switch's packet takes, sends the fewest packets and measured the most goodput here; 256, a hardware switch's packet "
            + "(Tofino-like), measures the per-packet costs a switch ASIC would see. Default: 8192 (with --switch xdp in jumbo frames).")
        Integer chunkElements;

        @Option(names = "--switch", defaultValue = "java", description = "The switch's data plane: java (the pipeline in this process, "
            + "workers as threads) or xdp (the XDP program in the kernel, each worker a process in its own network namespace over UDP; "
            + "root, clang, libbpf-dev; --baseline gloo only, --link unused). Default: ${DEFAULT-VALUE}.")
        String dataPlane;

        @Option(names = "--budget", defaultValue = "16777216", description = "Switch memory budget in bytes. Default: ${DEFAULT-VALUE}.")
        long budget;

        @Option(names = "--window", defaultValue = "256", description = "Steps in flight per worker (capped by the pool). Default: ${DEFAULT-VALUE}.")
        int window;

        @Option(names = "--worker-threads", defaultValue = "1", description = "Threads the workers (and the echo's clients) run on: "
            + "1 puts them all on one, 0 gives each worker a thread of its own, as separate processes have. Default: ${DEFAULT-VALUE}.")
        int workerThreads;

        @Option(names = "--timeout", defaultValue = "300", description = "Seconds a round may take before the run fails. Default: ${DEFAULT-VALUE}.")
        long timeoutSeconds;

        @Option(names = "--link", defaultValue = "shm", description = "How workers reach the switch: shm (shared-memory rings under "
            + "/dev/shm, as a worker on the switch's host reaches it with --switch shm:<dir>; every worker here is on its host, and "
            + "it measured 0.71x gloo where udp measured 0.37x) or udp (sockets on 127.0.0.1: the path workers on other hosts take, "
            + "through the kernel's socket layer). Default: ${DEFAULT-VALUE}.")
        String link;

        @Option(names = "--nio", description = "Use plain NIO instead of native epoll.")
        boolean nio;

        @Option(names = "--no-gso", description = "Do not batch sends with UDP GSO.")
        boolean noGso;

        @Option(names = "--no-gro", description = "Do not coalesce received packets with UDP GRO.")
        boolean noGro;

        @Option(names = "--baseline", defaultValue = "echo", description = "What the aggregation is measured against: echo (the raw "
            + "echo over the same link and topology, measured in every run) or gloo (PyTorch's gloo allreduce, benchmarks/gloo/allreduce.py: "
            + "the same workers as processes, elements and rounds, checked exactly; needs apt-get install python3-torch). "
            + "Default: ${DEFAULT-VALUE}.")
        String baseline;

        @Option(names = "--repeats", defaultValue = "3", description = "Runs of each, alternating (Serene, then the baseline); the "
            + "figures are the medians. Default: ${DEFAULT-VALUE}.")
        int repeats;

        @Option(names = "--python", defaultValue = "/usr/bin/python3", description = "The Python with PyTorch, for --baseline gloo. "
            + "Default: ${DEFAULT-VALUE}.")
        String python;

        @Option(names = "--gloo-script", description = "The gloo benchmark script. Default: benchmarks/gloo/allreduce.py of this checkout.")
        Path glooScript;

        @Option(names = "--json", description = "Print one JSON object as the last line.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            if (!baseline.equals("echo") && !baseline.equals("gloo")) {
                throw new IllegalArgumentException("--baseline must be echo or gloo, was " + baseline);
            }
            final boolean shm = RunSettings.shmLink("--link", link);
            final boolean xdp = RunSettings.xdpSwitch("--switch", dataPlane);
            if (xdp && !baseline.equals("gloo")) {
                throw new IllegalArgumentException("--switch xdp is measured against --baseline gloo (the raw echo runs in this process)");
            }
            if (repeats < 1) {
                throw new IllegalArgumentException("--repeats must be at least 1, was " + repeats);
            }
            final AllreduceBench.Config config = new AllreduceBench.Config()
                .workers(workers).elements(elements).rounds(rounds).warmupRounds(warmup).loss(loss).seed(seed)
                .chunkElements(chunkElements != null ? chunkElements : 8192)
                .budgetBytes(budget).window(window).workerThreads(workerThreads).preferEpoll(!nio).gso(!noGso).gro(!noGro)
                .shm(shm).timeoutSeconds(timeoutSeconds);
            final GlooBaseline gloo = baseline.equals("gloo")
                ? new GlooBaseline(glooScript != null ? glooScript : GlooBaseline.defaultScript(), python) : null;
            final PrintStream out = System.out;
            out.printf("bench allreduce: %d workers (%s), %d elements x %d rounds, loss %s, seed %d, against %s%s%n",
                workers, xdp ? "processes in network namespaces, over UDP through the XDP switch"
                    : "threads, " + (link.equals("shm") ? "one shared-memory ring" : "one UDP socket") + " each", elements, rounds, loss, seed,
                baseline.equals("gloo") ? "PyTorch gloo (" + workers + " processes)" : "the raw " + link + " echo",
                repeats > 1 ? ", " + repeats + " repeats alternating" : "");
            final List<Double> serene = new ArrayList<>();
            final List<Double> base = new ArrayList<>();
            final List<Double> ratios = new ArrayList<>();
            final List<Double> cpu = new ArrayList<>();
            final List<Double> baseCpu = new ArrayList<>();
            final List<Double> cpuBound = new ArrayList<>();
            final List<Map<String, Object>> runs = new ArrayList<>();
            boolean exact = true;
            AllreduceBench.Result r = null;
            for (int i = 0; i < repeats; i++) {
                r = xdp ? XdpAllreduce.run(config, out) : AllreduceBench.run(config, out);
                exact &= r.exact;
                final double b;
                final double bCpu;
                boolean baseExact = true;
                if (gloo != null) {
                    final GlooBaseline.Result g = gloo.run(workers, elements, rounds, Math.min(warmup, 3), seed, timeoutSeconds);
                    b = g.elementsPerSecond();
                    bCpu = g.cpuSecondsPerRound() * 1e3;
                    baseExact = g.exact();
                    exact &= g.exact();
                } else {
                    b = r.rawEchoElementsPerSecond;
                    bCpu = r.echoCpuMsPerRound;
                }
                final double ratio = r.elementsPerSecond / b;
                serene.add(r.elementsPerSecond);
                base.add(b);
                ratios.add(ratio);
                cpu.add(r.cpuMsPerRound);
                baseCpu.add(bCpu);
                cpuBound.add(r.cpuBoundElementsPerSecond(elements));
                final Map<String, Object> run = new LinkedHashMap<>();
                run.put("elementsPerSecond", r.elementsPerSecond);
                run.put("baselineElementsPerSecond", b);
                run.put("ratio", ratio);
                run.put("exact", r.exact);
                run.put("baselineExact", baseExact);
                run.put("cpuMsPerRound", r.cpuMsPerRound);
                run.put("baselineCpuMsPerRound", bCpu);
                runs.add(run);
                if (repeats > 1) {
                    out.printf("repeat %d: aggregation %.3g elements/s, %s %.3g elements/s, ratio %.3f; CPU per round %.1f ms against %.1f ms%n",
                        i + 1, r.elementsPerSecond, baseline, b, ratio, r.cpuMsPerRound, bCpu);
                }
            }
            out.printf("transport %s (gso %s), pool %d slots%n", r.transport, r.gso, r.poolSize);
            out.printf("exact: %s (every worker, every element, bitwise%s)%n", exact, gloo != null ? "; gloo's sums too" : "");
            out.printf("max |error| vs float sum: %.3g (bound %.3g)%n", r.maxAbsError, r.maxErrorBound);
            out.printf("aggregation: %.3g elements/s; %s: %.3g elements/s; ratio %.3f%s%n", median(serene),
                gloo != null ? "PyTorch gloo" : "raw " + link + " echo", median(base), median(ratios), repeats > 1 ? " (medians of " + repeats + ")" : "");
            out.printf("CPU per round, every thread: aggregation %.1f ms; %s: %.1f ms%s%n", median(cpu),
                gloo != null ? "PyTorch gloo (all its processes)" : "raw " + link + " echo", median(baseCpu), repeats > 1 ? " (medians)" : "");
            out.printf("with all %d cores busy, the aggregation's CPU per round would allow at most %.3g elements/s%n", AllreduceBench.CORES,
                median(cpuBound));
            out.printf("retransmissions %d, switch duplicates %d%n", r.retransmissions, r.switchDuplicates);
            if (json) {
                final Map<String, Object> line = new LinkedHashMap<>(r.toJson(config));
                line.put("baseline", baseline);
                line.put("repeats", repeats);
                line.put("medianElementsPerSecond", median(serene));
                line.put("baselineElementsPerSecond", median(base));
                line.put("baselineRatio", median(ratios));
                line.put("medianCpuMsPerRound", median(cpu));
                line.put("baselineCpuMsPerRound", median(baseCpu));
                line.put("cpuBoundElementsPerSecond", median(cpuBound));
                line.put("allExact", exact);
                line.put("runs", runs);
                out.println(Json.write(line));
            }
            return exact ? 0 : 1;
        }

        private static double median(final List<Double> values) {
            final List<Double> sorted = new ArrayList<>(values);
            Collections.sort(sorted);
            final int n = sorted.size();
            return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
        }
    }

    /** One worker process of {@code serene bench allreduce --switch xdp}, which starts it in its namespace (hidden). */
    @Command(name = "xdp-worker", hidden = true, mixinStandardHelpOptions = true,
        description = "A worker of serene bench allreduce --switch xdp: joins, runs the rounds, prints a JSON line a round.")
    static final class XdpWorker implements Callable<Integer> {
        @Option(names = "--switch", required = true, description = "The switch's HOST:PORT.")
        String switchAddress;

        @Option(names = "--id", required = true, description = "This worker's id.")
        int id;

        @Option(names = "--workers", required = true, description = "Workers.")
        int workers;

        @Option(names = "--elements", required = true, description = "Elements a round.")
        int elements;

        @Option(names = "--rounds", required = true, description = "Measured rounds.")
        int rounds;

        @Option(names = "--warmup", required = true, description = "Warm-up rounds.")
        int warmup;

        @Option(names = "--seed", required = true, description = "Seed of the inputs.")
        long seed;

        @Option(names = "--window", defaultValue = "256", description = "Steps in flight. Default: ${DEFAULT-VALUE}.")
        int window;

        @Option(names = "--timeout", defaultValue = "300", description = "Seconds a round may take. Default: ${DEFAULT-VALUE}.")
        long timeoutSeconds;

        @Override
        public Integer call() throws Exception {
            final AllreduceBench.Config config = new AllreduceBench.Config().workers(workers).elements(elements).rounds(rounds)
                .warmupRounds(warmup).seed(seed).window(window).timeoutSeconds(timeoutSeconds);
            return XdpAllreduce.worker(switchAddress, id, config, System.out);
        }
    }
}
