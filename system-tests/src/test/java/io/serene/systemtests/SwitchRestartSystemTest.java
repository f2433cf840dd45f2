package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.JobKeys;
import io.serene.protocol.sync.SyncConfig;
import io.serene.training.CheckpointDir;
import io.serene.training.data.FashionMnist;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code serene worker} processes under a switch that restarts, or with one of them restarted: a
 * worker without checkpoints learns at once that its job is gone (UNKNOWN_JOB, answered only to
 * holders of the job's tag) and stops saying so; workers with checkpoints join again by rebuilding
 * the job (the switch names the most rounds all of them can go on after) and end with the model of a
 * run without the fault, bit for bit; a restarted worker does the same with {@code --rejoin}, and the
 * stopped process it replaced, resumed, is told FENCED and stops.
 * Multi-process: tagged slow.
 */
@Tag("slow")
class SwitchRestartSystemTest {
    private static final Pattern HASH = Pattern.compile("\"modelHash\":\"([0-9a-f]{64})\"");
    private static final String SECRET = "the job's secret, long enough";
    private static final List<Throwable> ERRORS = Collections.synchronizedList(new ArrayList<>());

    @TempDir
    static Path shared;
    private static Path data;
    private static String clean;
    private static UdpTransport loop;

    private static SwitchPipeline newSwitch() {
        return new SwitchPipeline(new SwitchContext().budgetBytes(8 << 20).defaultSync(SyncConfig.bsp())
            .secret(JobKeys.secret(SECRET, "test")).conclude(), ERRORS::add);
    }

    private static Process worker(final int id, final int port, final Path checkpoints, final String... more) throws Exception {
        final List<String> args = new ArrayList<>(List.of("worker", "--switch", "127.0.0.1:" + port, "--id", "" + id, "--workers", "2",
            "--rounds", "80", "--batch", "32", "--eval-every", "20", "--data", data.toString(), "--seed", "9", "--timeout-seconds", "60"));
        if (checkpoints != null) {
            args.addAll(List.of("--checkpoint-dir", checkpoints.toString(), "--checkpoint-every", "10"));
        }
        args.addAll(List.of(more));
        return SereneProcess.start(Map.of(JobKeys.SECRET_ENV, SECRET), args.toArray(new String[0]));
    }

    /** A finished worker's output (exit 0 required unless {@code mayFail}). */
    private static String finish(final Process p, final boolean mayFail) throws Exception {
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        if (!mayFail) {
            assertThat(p.exitValue()).as(out + err).isZero();
        }
        return out + err;
    }

    private static String hash(final String out) {
        final Matcher m = HASH.matcher(out);
        assertThat(m.find()).as(out).isTrue();
        return m.group(1);
    }

    private static void await(final BooleanSupplier condition, final String what) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as(what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    /** Waits until both workers hold a checkpoint after round {@code round} or later. */
    private static void awaitCommonCheckpoint(final Path checkpoints, final int round) throws InterruptedException {
        await(() -> {
            try {
                return CheckpointDir.newestCommon(checkpoints, 2) >= round;
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, "checkpoints after round " + round);
    }

    private static int released(final UdpHost host, final SwitchPipeline pipeline) {
        return host.call(() -> pipeline.releasedRound(1)).join();
    }

    @BeforeAll
    static void aRunWithoutFaults() throws Exception {
        data = shared.resolve("data");
        FashionMnist.writeSynthetic(data, 2_000, 200, 5);
        loop = UdpTransport.create(1, true);
        try (UdpHost host = loop.bind(newSwitch(), new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final Process a = worker(0, host.localAddress().getPort(), null);
            final Process b = worker(1, host.localAddress().getPort(), null);
            clean = hash(finish(a, false));
            assertThat(hash(finish(b, false))).isEqualTo(clean);
        }
    }

    @AfterAll
    static void close() {
        loop.close();
        assertThat(ERRORS).isEmpty();
    }

    @Test
    @Timeout(300)
    void workersWithoutCheckpointsStopAtOnceWhenTheSwitchRestarts() throws Exception {
        SwitchPipeline pipeline = newSwitch();
        UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
        final int port = host.localAddress().getPort();
        final Process a = worker(0, port, null);
        final Process b = worker(1, port, null);
        final UdpHost first = host;
        final SwitchPipeline firstPipeline = pipeline;
        await(() -> released(first, firstPipeline) >= 20, "round 20 released");
        host.close();
        pipeline = newSwitch();
        host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", port), UdpOptions.defaults());
        final long restarted = System.nanoTime();
        for (final Process p : List.of(a, b)) {
            assertThat(finish(p, true)).contains("the switch has no job 1 any more").doesNotContain("Exception");
            assertThat(p.exitValue()).isEqualTo(1);
        }
        assertThat(System.nanoTime() - restarted).as("at once, not after their 60 s timeout").isLessThan(TimeUnit.SECONDS.toNanos(20));
        host.close();
    }

    @Test
    @Timeout(300)
    void workersWithCheckpointsRejoinARestartedSwitchByThemselvesAndEndWithTheSameModel(@TempDir final Path dir) throws Exception {
        SwitchPipeline pipeline = newSwitch();
        UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
        final int port = host.localAddress().getPort();
        final Path checkpoints = dir.resolve("checkpoints");
        final Process a = worker(0, port, checkpoints);
        final Process b = worker(1, port, checkpoints);
        final UdpHost first = host;
        final SwitchPipeline firstPipeline = pipeline;
        await(() -> released(first, firstPipeline) >= 35, "round 35 released");
        // the switch loses every register: a new one on the same port
        host.close();
        pipeline = newSwitch();
        host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", port), UdpOptions.defaults());
        final String outA = finish(a, false);
        final String outB = finish(b, false);
        assertThat(outA).contains("the switch has no job 1 any more", "joining again from its checkpoints").containsPattern(
            "worker 0: the job goes on after round (3[4-9]|4\\d)");
        assertThat(List.of(hash(outA), hash(outB))).as("bitwise the run without the restart").containsExactly(clean, clean);
        host.close();
    }

    @Test
    @Timeout(300)
    void aWorkerRestartedWithRejoinRebuildsTheJobAndEveryWorkerEndsWithTheSameModel(@TempDir final Path dir) throws Exception {
        final SwitchPipeline pipeline = newSwitch();
        try (UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final int port = host.localAddress().getPort();
            final Path checkpoints = dir.resolve("checkpoints");
            final Process a = worker(0, port, checkpoints);
            final Process b = worker(1, port, checkpoints);
            awaitCommonCheckpoint(checkpoints, 30);
            b.destroyForcibly().waitFor();
            // worker 1 back, a new process on a new address, from its own checkpoints
            final Process back = worker(1, port, checkpoints, "--rejoin");
            final String outA = finish(a, false);
            final String outBack = finish(back, false);
            assertThat(outA).contains("joining again from its checkpoints");
            assertThat(outBack).containsPattern("resumed from its checkpoint after round (3|4)0");
            assertThat(List.of(hash(outA), hash(outBack))).as("bitwise the run without the restart").containsExactly(clean, clean);
            assertThat(host.call(() -> pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).join()).isEqualTo(1);
        }
    }

    @Test
    @Timeout(300)
    void aWorkerRestartedOverADamagedNewestCheckpointRejoinsFromTheOneBeforeAndEndsWithTheSameModel(@TempDir final Path dir)
        throws Exception {
        final SwitchPipeline pipeline = newSwitch();
        try (UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final int port = host.localAddress().getPort();
            final Path checkpoints = dir.resolve("checkpoints");
            final Process a = worker(0, port, checkpoints);
            final Process b = worker(1, port, checkpoints);
            awaitCommonCheckpoint(checkpoints, 30);
            b.destroyForcibly().waitFor();
            // worker 1 died during a write, or its disk lost the file's tail: its newest checkpoint is cut short
            int newest = -1;
            for (int n = 10; n <= 80; n += 10) {
                if (java.nio.file.Files.exists(checkpoints.resolve("worker-1-after-" + n + ".ckpt"))) {
                    newest = n;
                }
            }
            final Path cut = checkpoints.resolve("worker-1-after-" + newest + ".ckpt");
            java.nio.file.Files.write(cut, java.util.Arrays.copyOf(java.nio.file.Files.readAllBytes(cut), 500));
            final Process back = worker(1, port, checkpoints, "--rejoin");
            final String outA = finish(a, false);
            final String outBack = finish(back, false);
            // its own newest does not read clean: the job goes back to the round before, which every worker holds exactly
            assertThat(outBack).contains("passed over", cut.getFileName().toString(),
                "resumed from its checkpoint after round " + (newest - 10));
            assertThat(List.of(hash(outA), hash(outBack))).as("bitwise the run without the fault%nworker 0:%n%s%nworker 1 back:%n%s",
                outA, outBack).containsExactly(clean, clean);
        }
    }

    @Test
    @Timeout(300)
    void aStoppedWorkerWhoseReplacementJoinedIsFencedWhenItResumesAndTheJobEndsWithTheSameModel(@TempDir final Path dir)
        throws Exception {
        final SwitchPipeline pipeline = newSwitch();
        try (UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final int port = host.localAddress().getPort();
            final Path checkpoints = dir.resolve("checkpoints");
            final Process a = worker(0, port, checkpoints);
            final Process zombie = worker(1, port, checkpoints);
            awaitCommonCheckpoint(checkpoints, 30);
            signal(zombie, "STOP");
            // its replacement, a new process on a new address, rebuilds the job from the checkpoints
            final Process back = worker(1, port, checkpoints, "--rejoin");
            await(() -> host.call(() -> pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).join() == 1
                && released(host, pipeline) >= 5, "the rebuilt job going on");
            // the stopped process resumes: its packets carry its key but numbers from before its replacement's, from its old address
            signal(zombie, "CONT");
            final String outZombie = finish(zombie, true);
            assertThat(zombie.exitValue()).as(outZombie).isNotZero();
            assertThat(outZombie).contains("worker 1 was fenced");
            final String outA = finish(a, false);
            final String outBack = finish(back, false);
            assertThat(List.of(hash(outA), hash(outBack))).as("bitwise the run without the zombie").containsExactly(clean, clean);
            assertThat(host.call(() -> pipeline.counters().get(SwitchCounter.JOBS_REBUILT)).join()).as("the zombie rebuilt nothing")
                .isEqualTo(1);
            assertThat(host.call(() -> pipeline.counters().get(SwitchCounter.DROP_REPLAYED)).join()).isPositive();
        }
    }

    private static void signal(final Process p, final String signal) throws Exception {
        assertThat(new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid())).start().waitFor()).isZero();
    }
}
