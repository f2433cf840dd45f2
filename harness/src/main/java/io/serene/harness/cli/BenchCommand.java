package io.serene.harness.cli;

import io.serene.training.Json;
import io.serene.harness.bench.AllreduceBench;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.util.concurrent.Callable;

/** {@code serene bench allreduce}: the end-to-end aggregation benchmark against a raw UDP echo. */
@Command(name = "bench", mixinStandardHelpOptions = true, description = "Benchmarks.",
    subcommands = {BenchCommand.Allreduce.class})
public final class BenchCommand implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "allreduce", mixinStandardHelpOptions = true,
        description = {
            "Runs one switch and N workers over UDP on 127.0.0.1, all in this process: the workers are "
                + "threads, not processes (each with its own socket; the switch runs on one event loop thread and "
                + "the workers share a second one).",
            "Checks that every worker received the exact integer sum of all quantized inputs (bitwise, all "
                + "workers equal) and measures the aggregation goodput, then, in the same run, the goodput of a raw "
                + "UDP echo through the same topology, sockets, threads and batching, and reports their ratio.",
            "Aggregation and echo alternate round by round, under the same injected loss (applied to every "
                + "packet any of them sends) and the same loss recovery."})
    static final class Allreduce implements Callable<Integer> {
        @Option(names = "--workers", defaultValue = "4", description = "Workers (1-64). Default: ${DEFAULT-VALUE}.")
        int workers;

        @Option(names = "--elements", defaultValue = "1000000", description = "Gradient elements per round. Default: ${DEFAULT-VALUE}.")
        int elements;

        @Option(names = "--rounds", defaultValue = "5", description = "Measured rounds. Default: ${DEFAULT-VALUE}.")
        int rounds;

        @Option(names = "--warmup", defaultValue = "10", description = "Unmeasured warm-up rounds. Default: ${DEFAULT-VALUE}.")
        int warmup;

        @Option(names = "--loss", defaultValue = "0", description = "Injected packet loss rate in [0, 0.5). Default: ${DEFAULT-VALUE}.")
        double loss;

        @Option(names = "--seed", defaultValue = "7", description = "Seed of inputs and loss. Default: ${DEFAULT-VALUE}.")
        long seed;

        @Option(names = "--chunk-elements", defaultValue = "256", description = "Elements per packet (K). Default: ${DEFAULT-VALUE}.")
        int chunkElements;

        @Option(names = "--budget", defaultValue = "16777216", description = "Switch memory budget in bytes. Default: ${DEFAULT-VALUE}.")
        long budget;

        @Option(names = "--window", defaultValue = "256", description = "Steps in flight per worker (capped by the pool). Default: ${DEFAULT-VALUE}.")
        int window;

        @Option(names = "--timeout", defaultValue = "300", description = "Seconds a round may take before the run fails. Default: ${DEFAULT-VALUE}.")
        long timeoutSeconds;

        @Option(names = "--nio", description = "Use plain NIO instead of native epoll.")
        boolean nio;

        @Option(names = "--no-gso", description = "Do not batch sends with UDP GSO.")
        boolean noGso;

        @Option(names = "--no-gro", description = "Do not coalesce received packets with UDP GRO.")
        boolean noGro;

        @Option(names = "--json", description = "Print one JSON object as the last line.")
        boolean json;

        @Override
        public Integer call() throws Exception {
            final AllreduceBench.Config config = new AllreduceBench.Config()
                .workers(workers).elements(elements).rounds(rounds).warmupRounds(warmup).loss(loss).seed(seed)
                .chunkElements(chunkElements).budgetBytes(budget).window(window).preferEpoll(!nio).gso(!noGso).gro(!noGro).timeoutSeconds(timeoutSeconds);
            final PrintStream out = System.out;
            out.printf("bench allreduce: %d workers (threads, one UDP socket each), %d elements x %d rounds, loss %s, seed %d%n",
                workers, elements, rounds, loss, seed);
            final AllreduceBench.Result r = AllreduceBench.run(config, out);
            out.printf("transport %s (gso %s), pool %d slots%n", r.transport, r.gso, r.poolSize);
            out.printf("exact: %s (every worker, every element, bitwise)%n", r.exact);
            out.printf("max |error| vs float sum: %.3g (bound %.3g)%n", r.maxAbsError, r.maxErrorBound);
            out.printf("aggregation: %.3g elements/s; raw UDP echo: %.3g elements/s; ratio %.3f%n",
                r.elementsPerSecond, r.rawEchoElementsPerSecond, r.ratio);
            out.printf("retransmissions %d, switch duplicates %d%n", r.retransmissions, r.switchDuplicates);
            if (json) {
                out.println(Json.write(r.toJson(config)));
            }
            return r.exact ? 0 : 1;
        }
    }
}
