package io.serene.systemtests;

import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code policies: [bsp, ddp]} in an experiment file: PyTorch DDP (gloo) trains the same MLP on the
 * same batches beside Serene's BSP, its steps padded to the modelled device, and the report has its
 * row, on the modelled clock. Needs Debian's python3-torch (skipped, saying so, without).
 * Multi-process: tagged slow.
 */
@Tag("slow")
class DdpBaselineSystemTest {
    @Test
    @Timeout(300)
    void ddpTrainsBesideSerenesBspInOneExperiment(@TempDir final Path dir) throws Exception {
        final Process probe = new ProcessBuilder("/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_gloo_available()")
            .redirectErrorStream(true).start();
        probe.getInputStream().readAllBytes();
        Assumptions.assumeTrue(probe.waitFor(60, TimeUnit.SECONDS) && probe.exitValue() == 0,
            "no PyTorch with gloo at /usr/bin/python3 (apt-get install python3-torch): DDP baseline check skipped");
        FashionMnist.writeSynthetic(dir.resolve("data"), 2_000, 200, 5);
        Files.writeString(dir.resolve("ddp.yaml"), String.join("\n", "name: ddp-check", "mode: train", "model: mlp", "workers: [2]",
            "rounds: 30", "stepTime: 50ms", "targetAccuracy: 0.5", "evalEvery: 10", "clock: virtual", "policies: [bsp, ddp]",
            "stragglers: ['persistent:1:x2']", "seeds: [1]", ""));
        final Process p = SereneProcess.start("experiment", dir.resolve("ddp.yaml").toString(), "--data", dir.resolve("data").toString(),
            "--out", dir.resolve("out").toString());
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(240, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out + err).isZero();
        final List<String> rows = Files.readAllLines(dir.resolve("out").resolve("summary.csv"), StandardCharsets.UTF_8);
        final String ddp = rows.stream().filter(r -> r.contains(",ddp,")).findFirst().orElseThrow();
        final String[] cells = ddp.split(",");
        // worker 1 twice as slow: 30 rounds wait for its 100 ms steps, on the modelled clock (faithful unless the
        // host was too busy to keep up: the verdict says which)
        assertThat(Double.parseDouble(cells[6])).as("DDP's job time: " + ddp).isBetween(30 * 0.100, 30 * 0.100 * 2);
        assertThat(cells[12]).as("its clock").startsWith("modelled");
        assertThat(Double.parseDouble(cells[10])).as("it learned: " + ddp).isGreaterThan(0.3);
        assertThat(Files.readString(dir.resolve("out").resolve("report.html"), StandardCharsets.UTF_8)).contains("ddp");
        final String summary = Files.readString(dir.resolve("out").resolve("runs").resolve("mlp-w2-persistent_1_x2").resolve("ddp")
            .resolve("seed-1").resolve("summary.json"), StandardCharsets.UTF_8);
        assertThat(summary).contains("DistributedDataParallel", "padded to the modelled 50ms");
    }
}
