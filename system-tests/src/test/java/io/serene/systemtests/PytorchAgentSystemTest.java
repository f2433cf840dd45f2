package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.training.data.FashionMnist;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Serene from PyTorch (python/serene): DDP through the communication hook and the agent
 * ({@code serene agent}, started by each rank's client) against a switch in this process, checked by
 * python/tests/ddp_check.py. Needs Debian's python3-torch (skipped, saying so, without).
 */
@Tag("slow")
class PytorchAgentSystemTest {
    @BeforeAll
    static void needsTorch() throws Exception {
        final Process probe = new ProcessBuilder("/usr/bin/python3", "-c", "import torch.distributed as d, numpy; assert d.is_gloo_available()")
            .redirectErrorStream(true).start();
        probe.getInputStream().readAllBytes();
        Assumptions.assumeTrue(probe.waitFor(60, TimeUnit.SECONDS) && probe.exitValue() == 0,
            "no PyTorch with gloo at /usr/bin/python3 (apt-get install python3-torch): PyTorch agent checks skipped");
    }

    @Test
    @Timeout(300)
    void ddpThroughTheHookMatchesGlooAndEveryRankEndsWithTheSameModel() throws Exception {
        check("bsp", "bsp", "--steps", "50");
    }

    @Test
    @Timeout(300)
    void aRankExcludedByTheConfigDoesNotHoldTheOthersBackAndEndsWithTheirModel() throws Exception {
        check("bsp+exclude:1+drop", "excluded", "--steps", "20");
    }

    @Test
    @Timeout(300)
    void badInputIsAClearPythonErrorNeverAHang() throws Exception {
        check("bsp", "bad");
    }

    @Test
    @Timeout(300)
    void sereneTrainRunsAPytorchScriptAsItsWorkersAndSummarizesItsRun(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 400, 5);
        final Path out = dir.resolve("run");
        final String stdout = SereneProcess.expectSuccess(List.of("train", "--pytorch", shipped("examples/pytorch/train.py") + " --model mlp",
            "--workers", "2", "--rounds", "30", "--eval-every", "10", "--step-time", "40ms", "--stragglers", "persistent:1:x2",
            "--data", dir.toString(), "--out", out.toString(), "--json"));
        final JsonNode summary = SereneProcess.lastJsonLine(stdout);
        assertThat(summary.path("modelsEqual").asBoolean()).as(stdout).isTrue();
        assertThat(summary.path("accuracyCurve")).hasSize(3);
        assertThat(summary.path("finalAccuracy").asDouble()).isGreaterThan(0.3);
        assertThat(summary.path("run").path("model").asText()).isEqualTo("pytorch " + shipped("examples/pytorch/train.py") + " --model mlp");
        assertThat(summary.path("fidelity").path("clock").asText()).isEqualTo("modelled");
        assertThat(summary.path("fidelity").path("steps").asLong()).isEqualTo(60);
        // worker 1 steps twice as long: BSP waits for it, about 30 x 80 ms
        assertThat(summary.path("jctSeconds").asDouble()).isBetween(2.3, 30.0);
        assertThat(Files.readAllLines(out.resolve("records.jsonl"))).hasSize(60);
    }

    /** python/tests/ddp_check.py of this checkout, found upwards from the working directory. */
    private static Path script() {
        return shipped("python/tests/ddp_check.py");
    }

    /** A file of this checkout, found upwards from the working directory. */
    private static Path shipped(final String relative) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            final Path file = dir.resolve(relative);
            if (Files.isRegularFile(file)) {
                return file;
            }
        }
        throw new IllegalStateException("no " + relative + " above " + Path.of("").toAbsolutePath());
    }

    /** Runs ddp_check.py with {@code args} against a switch whose new jobs start under {@code sync}; it must print ok. */
    private static void check(final String sync, final String... args) throws Exception {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(16 << 20)
            .defaultSync(SyncConfigParser.parse(sync)).conclude(), errors::add);
        try (UdpTransport loop = UdpTransport.create(1, true);
             UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final List<String> command = new ArrayList<>(List.of("/usr/bin/python3",
                script().toString()));
            command.addAll(List.of(args));
            final ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
            pb.environment().put("SERENE_SWITCH", "127.0.0.1:" + host.localAddress().getPort());
            pb.environment().put("SERENE_AGENT_COMMAND", String.join(" ", System.getProperty("java.home") + "/bin/java", "-Xmx256m",
                "-cp", System.getProperty("java.class.path"), "io.serene.harness.cli.Serene"));
            pb.environment().put("TMPDIR", System.getProperty("java.io.tmpdir"));
            final Process p = pb.start();
            final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(280, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(out).isZero();
            assertThat(out).contains("\"ok\": true");
            assertThat(errors).isEmpty();
        }
    }
}
