package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.JobTag;
import io.serene.protocol.sync.SyncConfig;
import io.serene.training.Checkpoint;
import io.serene.training.data.FashionMnist;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A switch that restarts under {@code serene worker} processes it does not launch: the workers learn
 * at once that their job is gone (UNKNOWN_JOB, answered only to holders of the job's tag) and stop
 * saying so, instead of waiting out their timeout; resumed from their checkpoints against the new
 * switch they end with the model of a run without the restart. Multi-process: tagged slow.
 */
@Tag("slow")
class SwitchRestartSystemTest {
    private static final Pattern HASH = Pattern.compile("\"modelHash\":\"([0-9a-f]{64})\"");
    private static final String SECRET = "the job's secret, long enough";

    private static SwitchPipeline newSwitch(final List<Throwable> errors) {
        return new SwitchPipeline(new SwitchContext().budgetBytes(8 << 20).defaultSync(SyncConfig.bsp())
            .secret(JobTag.secret(SECRET, "test")).conclude(), errors::add);
    }

    private static List<Process> workers(final Path data, final int port, final Path checkpoints, final Integer resumeAfter)
        throws Exception {
        final List<Process> workers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
            final List<String> args = new ArrayList<>(List.of("worker", "--switch", "127.0.0.1:" + port, "--id", "" + w, "--workers", "2",
                "--rounds", "80", "--batch", "32", "--eval-every", "20", "--data", data.toString(), "--seed", "9",
                "--timeout-seconds", "60"));
            if (checkpoints != null) {
                args.addAll(List.of("--checkpoint-dir", checkpoints.toString(), "--checkpoint-every", "10"));
            }
            if (resumeAfter != null) {
                args.addAll(List.of("--resume-after", "" + resumeAfter));
            }
            workers.add(SereneProcess.start(Map.of(JobTag.SECRET_ENV, SECRET), args.toArray(new String[0])));
        }
        return workers;
    }

    /** Waits for the workers; returns each one's model hash (exit 0), or its output (otherwise) when {@code mayFail}. */
    private static List<String> finish(final List<Process> workers, final boolean mayFail) throws Exception {
        final List<String> results = new ArrayList<>();
        for (final Process p : workers) {
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
            if (p.exitValue() != 0 && mayFail) {
                results.add(out + err);
                continue;
            }
            assertThat(p.exitValue()).as(out + err).isZero();
            final Matcher m = HASH.matcher(out);
            assertThat(m.find()).as(out).isTrue();
            results.add(m.group(1));
        }
        return results;
    }

    @Test
    @Timeout(300)
    void workersOfARestartedSwitchStopAtOnceAndResumeFromTheirCheckpointsToTheSameModel(@TempDir final Path dir) throws Exception {
        final Path data = dir.resolve("data");
        FashionMnist.writeSynthetic(data, 2_000, 200, 5);
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final List<String> clean;
        try (UdpTransport loop = UdpTransport.create(1, true);
             UdpHost host = loop.bind(newSwitch(errors), new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            clean = finish(workers(data, host.localAddress().getPort(), null, null), false);
        }
        final Path checkpoints = dir.resolve("checkpoints");
        try (UdpTransport loop = UdpTransport.create(1, true)) {
            UdpHost host = loop.bind(newSwitch(errors), new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
            final int port = host.localAddress().getPort();
            final List<Process> running = workers(data, port, checkpoints, null);
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (Checkpoint.newestCommon(checkpoints, 2) < 30) {
                assertThat(System.nanoTime()).as("checkpoints after round 30").isLessThan(deadline);
                Thread.sleep(20);
            }
            // the switch loses every register: a new one on the same port
            host.close();
            host = loop.bind(newSwitch(errors), new InetSocketAddress("127.0.0.1", port), UdpOptions.defaults());
            final long restarted = System.nanoTime();
            final List<String> stopped = finish(running, true);
            assertThat(System.nanoTime() - restarted).as("at once, not after their 60 s timeout").isLessThan(TimeUnit.SECONDS.toNanos(20));
            for (final String out : stopped) {
                assertThat(out).contains("the switch has no job 1 any more").doesNotContain("Exception");
            }
            final int after = Checkpoint.newestCommon(checkpoints, 2);
            assertThat(after).isGreaterThanOrEqualTo(30);
            final List<String> resumed = finish(workers(data, port, checkpoints, after), false);
            assertThat(resumed).as("both, bitwise the run without the restart").containsExactly(clean.get(0), clean.get(0));
            assertThat(clean.get(1)).isEqualTo(clean.get(0));
            host.close();
        }
        assertThat(errors).isEmpty();
    }
}
