package io.serene.harness.bench;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AllreduceBenchTest {
    private static String run(final AllreduceBench.Config config, final AllreduceBench.Result[] result) throws Exception {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream progress = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            result[0] = AllreduceBench.run(config, progress);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    @Timeout(120)
    void overSharedMemoryWithAThreadPerWorkerEveryWorkerGetsTheExactSumsAndResultsAreWrittenOnce() throws Exception {
        final AllreduceBench.Result[] result = new AllreduceBench.Result[1];
        final String out = run(new AllreduceBench.Config().shm(true).workers(3).elements(20_011).rounds(3).warmupRounds(1)
            .chunkElements(1024).workerThreads(0), result);
        assertThat(result[0].exact).as(out).isTrue();
        assertThat(result[0].toJson(new AllreduceBench.Config().workers(3).workerThreads(0)).get("workerThreads")).isEqualTo(3);
        assertThat(out).contains("(3 threads, together)").containsPattern("[1-9][0-9]* multicasts written once \\(0 as copies\\)");
    }

    @Test
    @Timeout(120)
    void overUdpWithLossAndTwoWorkerThreadsTheSumsStayExact() throws Exception {
        final AllreduceBench.Result[] result = new AllreduceBench.Result[1];
        final String out = run(new AllreduceBench.Config().workers(4).elements(20_011).rounds(3).warmupRounds(1).loss(0.01)
            .workerThreads(2), result);
        assertThat(result[0].exact).as(out).isTrue();
        assertThat(out).contains("(2 threads, together)");
        // processor time of the switch's, the workers' and the caller's threads; of the echo's threads
        assertThat(result[0].cpuMsPerRound).as(out).isPositive();
        assertThat(result[0].echoCpuMsPerRound).as(out).isPositive();
    }

    @Test
    void refusesANegativeThreadCount() {
        assertThatThrownBy(() -> AllreduceBench.run(new AllreduceBench.Config().workerThreads(-1), System.out))
            .hasMessageContaining("--worker-threads must be >= 0");
    }
}
