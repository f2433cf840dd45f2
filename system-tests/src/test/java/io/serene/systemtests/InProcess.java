package io.serene.systemtests;

import io.serene.harness.cli.Serene;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerHost;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** What the in-process system tests share: the CLI run in this JVM, and BSP rounds of all-ones gradients. */
final class InProcess {
    private InProcess() {
    }

    /** Runs the CLI in this JVM; returns exit code and everything it printed (standard output, then errors). */
    static Object[] cli(final String... args) {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final PrintStream savedOut = System.out;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
             PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            System.setOut(o);
            final picocli.CommandLine cl = Serene.commandLine();
            cl.setErr(new PrintWriter(e, true));
            final int code = cl.execute(args);
            return new Object[] {code, out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8)};
        } finally {
            System.setOut(savedOut);
        }
    }

    /** Rounds {@code from..to-1} on every worker (each waits for its clearance), every aggregate from all of them; a pause after each. */
    static void rounds(final List<WorkerHost> workers, final int elements, final int from, final int to, final long pauseMs)
        throws Exception {
        final float[] g = new float[elements];
        Arrays.fill(g, 1f);
        for (int round = from; round < to; round++) {
            final List<CompletableFuture<Aggregate>> futures = new ArrayList<>();
            for (final WorkerHost w : workers) {
                w.awaitClearance(round).get(20, TimeUnit.SECONDS);
                futures.add(w.allreduce(round, g));
            }
            for (final CompletableFuture<Aggregate> f : futures) {
                assertThat(f.get(30, TimeUnit.SECONDS).contributorCount()).isEqualTo(workers.size());
            }
            if (pauseMs > 0) {
                Thread.sleep(pauseMs);
            }
        }
    }
}
