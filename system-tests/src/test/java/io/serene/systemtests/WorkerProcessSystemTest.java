package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.sync.SyncConfig;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code serene worker} as separate processes training through a switch over UDP, on a synthetic dataset. */
/** Multi-process: tagged slow (mvn -Pall runs it). */
@Tag("slow")
class WorkerProcessSystemTest {
    private static final Pattern HASH = Pattern.compile("\"modelHash\":\"([0-9a-f]{64})\"");

    @Test
    @Timeout(180)
    void twoWorkerProcessesTrainThroughTheSwitchAndEndWithTheSameModel(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(8 << 20)
            .defaultSync(SyncConfig.bsp()).conclude(), errors::add);
        try (UdpTransport loop = UdpTransport.create(1, true);
             UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final String target = "127.0.0.1:" + host.localAddress().getPort();
            final List<Process> workers = new ArrayList<>();
            final String[] training = {"--rounds", "40", "--batch", "32", "--eval-every", "20", "--data", dir.toString(), "--seed", "9",
                "--stragglers", "persistent:1:x3"};
            final List<String> first = new ArrayList<>(List.of("worker", "--switch", target, "--id", "0", "--workers", "2"));
            first.addAll(List.of(training));
            workers.add(SereneProcess.start(first.toArray(new String[0])));
            // worker 1 as a launcher starts it: its id, the job's size and the switch from RANK, WORLD_SIZE and SERENE_SWITCH alone
            final List<String> second = new ArrayList<>(List.of("worker"));
            second.addAll(List.of(training));
            workers.add(SereneProcess.start(Map.of("RANK", "1", "WORLD_SIZE", "2", "SERENE_SWITCH", target), second.toArray(new String[0])));
            final List<String> hashes = new ArrayList<>();
            final List<Double> injectedSeconds = new ArrayList<>();
            for (final Process p : workers) {
                final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
                assertThat(p.exitValue()).as(out + err).isZero();
                assertThat(out).contains("round 20 loss").contains("done: 40 rounds");
                final Matcher m = HASH.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                hashes.add(m.group(1));
                final Matcher injected = Pattern.compile("\"injectedSeconds\":([0-9.E-]+)").matcher(out);
                assertThat(injected.find()).as(out).isTrue();
                injectedSeconds.add(Double.parseDouble(injected.group(1)));
            }
            assertThat(hashes.get(1)).as("both workers hold the same model").isEqualTo(hashes.get(0));
            assertThat(injectedSeconds.get(0)).as("worker 0 is not a straggler").isZero();
            assertThat(injectedSeconds.get(1)).as("worker 1 sleeps twice its compute time").isPositive();
            assertThat(errors).isEmpty();
        }
    }

    @Test
    @Timeout(120)
    void badInputGetsAClearMessageAndANonZeroExit(@TempDir final Path dir) throws Exception {
        SereneProcess.expectFailure(2, "no dataset directory", "worker", "--id", "0", "--workers", "1", "--data",
            dir.resolve("missing").toString());
        SereneProcess.expectFailure(2, "unknown model 'resnet': expected mlp or cnn", "worker", "--id", "0", "--workers", "1", "--model", "resnet");
        SereneProcess.expectFailure(2, "--id must be in 0..1", "worker", "--id", "5", "--workers", "2");
        SereneProcess.expectFailure(2, "needs its id and the job's worker count: --id and --workers, or RANK and WORLD_SIZE", "worker");
        SereneProcess.expectFailure(2, "SERENE_DEFAULTS names", Map.of("SERENE_DEFAULTS", dir.resolve("none.properties").toString()),
            "worker");
        // the defaults file is read: its id is out of range for its worker count
        final Path defaults = dir.resolve("serene.properties");
        Files.writeString(defaults, "worker.id = 5\nworkers = 2\n");
        SereneProcess.expectFailure(2, "--id must be in 0..1 and --workers positive, were 5 and 2", Map.of("SERENE_DEFAULTS", defaults.toString()),
            "worker");
        SereneProcess.expectFailure(2, "unknown straggler profile part 'sometimes'", "worker", "--id", "0", "--workers", "1",
            "--stragglers", "sometimes");
        FashionMnist.writeSynthetic(dir, 100, 20, 5);
        SereneProcess.expectFailure(1, "no join job 1 at 127.0.0.1:9 within 2 s", "worker", "--id", "0", "--workers", "1", "--data", dir.toString(),
            "--switch", "127.0.0.1:9", "--timeout-seconds", "2");
    }
}
