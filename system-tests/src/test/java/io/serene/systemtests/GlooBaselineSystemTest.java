package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * {@code serene bench allreduce --baseline gloo}: Serene and PyTorch's gloo allreduce with the same
 * workers, elements and rounds in one invocation, both exact, both goodputs and their ratio in the
 * JSON; a clear error without PyTorch. Needs Debian's python3-torch (skipped, saying so, without).
 * Multi-process: tagged slow.
 */
@Tag("slow")
class GlooBaselineSystemTest {
    @Test
    @Timeout(300)
    void serenesGoodputIsMeasuredAgainstGlooInTheSameRun() throws Exception {
        SereneProcess.assumeGloo();
        final Process p = SereneProcess.start("bench", "allreduce", "--workers", "2", "--elements", "20000", "--rounds", "3", "--warmup", "2",
            "--baseline", "gloo", "--repeats", "2", "--gloo-script", Path.of("..", "benchmarks", "gloo", "allreduce.py").toString(), "--json");
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isZero();
        assertThat(out).contains("against PyTorch gloo (2 processes)", "repeat 2:", "PyTorch gloo: ", "(medians of 2)",
            "CPU per round, every thread: aggregation ", "PyTorch gloo (all its processes): ", "would allow at most ");
        final String[] lines = out.strip().split("\n");
        final JsonNode json = new ObjectMapper().readTree(lines[lines.length - 1]);
        assertThat(json.path("baseline").asText()).isEqualTo("gloo");
        assertThat(json.path("allExact").asBoolean()).isTrue();
        assertThat(json.path("runs")).hasSize(2);
        assertThat(json.path("runs").get(0).path("baselineExact").asBoolean()).as("gloo's sums checked too").isTrue();
        assertThat(json.path("baselineElementsPerSecond").asDouble()).isPositive();
        // both sides' processor time per round, every thread of Serene's and of gloo's processes counted
        assertThat(json.path("medianCpuMsPerRound").asDouble()).isPositive();
        assertThat(json.path("baselineCpuMsPerRound").asDouble()).isPositive();
        assertThat(json.path("runs").get(1).path("baselineCpuMsPerRound").asDouble()).isPositive();
        assertThat(json.path("cpuBoundElementsPerSecond").asDouble()).isPositive();
        // the ratio reported is the median of the runs' ratios (two runs: their mean), each run's its own goodputs' ratio
        for (final JsonNode run : json.path("runs")) {
            assertThat(run.path("ratio").asDouble()).isCloseTo(
                run.path("elementsPerSecond").asDouble() / run.path("baselineElementsPerSecond").asDouble(), within(1e-9));
        }
        assertThat(json.path("baselineRatio").asDouble()).isCloseTo(
            (json.path("runs").get(0).path("ratio").asDouble() + json.path("runs").get(1).path("ratio").asDouble()) / 2, within(1e-9));
    }

    @Test
    @Timeout(120)
    void withoutPyTorchTheBaselineSaysWhatToInstall(@TempDir final Path dir) throws Exception {
        final Path python = dir.resolve("python-without-torch");
        Files.writeString(python, "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n");
        Files.setPosixFilePermissions(python, PosixFilePermissions.fromString("rwxr-xr-x"));
        SereneProcess.expectFailure(2, "--baseline gloo needs PyTorch: apt-get install python3-torch", "bench", "allreduce", "--workers", "2",
            "--elements", "1000", "--rounds", "1", "--warmup", "0", "--baseline", "gloo", "--python", python.toString(), "--gloo-script",
            Path.of("..", "benchmarks", "gloo", "allreduce.py").toString());
        SereneProcess.expectFailure(2, "--baseline must be echo or gloo, was nccl", "bench", "allreduce", "--baseline", "nccl");
    }
}
