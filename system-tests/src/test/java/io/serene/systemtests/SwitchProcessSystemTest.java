package io.serene.systemtests;

import io.serene.transport.FaultInjector;
import io.serene.transport.ShmOptions;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** `serene switch` as its own process; workers in this process reach it over UDP or shared memory. */
@Tag("slow")
class SwitchProcessSystemTest {
    private static final Pattern LISTENING = Pattern.compile("switch listening on udp .*:(\\d+)");

    @Test
    @Timeout(120)
    void workersAggregateExactlyThroughASwitchProcess() throws Exception {
        final Path token = Files.createTempFile("serene", ".token");
        Files.writeString(token, "t0ken\n");
        final Process process = serene("switch", "--port", "0", "--bind", "127.0.0.1", "--budget", "8388608",
            "--stats-seconds", "0", "--metrics-port", "0", "--control-port", "0", "--control-bind", "0.0.0.0",
            "--control-token-file", token.toString());
        try {
            final BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            int port = -1;
            int metricsPort = -1;
            int controlPort = -1;
            final List<String> lines = new ArrayList<>();
            for (String line; metricsPort < 0 && (line = out.readLine()) != null; ) {
                lines.add(line);
                final Matcher m = LISTENING.matcher(line);
                if (m.find()) {
                    port = Integer.parseInt(m.group(1));
                }
                final Matcher c = Pattern.compile("control service on tcp 0\\.0\\.0\\.0:(\\d+), callers need the token").matcher(line);
                if (c.find()) {
                    controlPort = Integer.parseInt(c.group(1));
                }
                final Matcher mm = Pattern.compile("metrics on http://127\\.0\\.0\\.1:(\\d+)/metrics").matcher(line);
                if (mm.find()) {
                    metricsPort = Integer.parseInt(mm.group(1));
                }
            }
            assertThat(port).as("switch output: %s", lines).isPositive();
            assertThat(controlPort).as("switch output: %s", lines).isPositive();
            assertThat(lines.get(0)).contains("switch memory").contains("8388608");

            final int workers = 3;
            final int elements = 20_000;
            final FaultInjector faults = new FaultInjector(17, 0.05, 0, 0);
            try (UdpTransport loop = UdpTransport.create(1, true)) {
                final List<WorkerHost> udpWorkers = new ArrayList<>();
                for (int w = 0; w < workers; w++) {
                    udpWorkers.add(WorkerHost.start(new WorkerContext().jobId(9).workerId(w).workers(workers)
                            .elementsPerRound(elements), new InetSocketAddress("127.0.0.1", port),
                        new InetSocketAddress("127.0.0.1", 0), loop, UdpOptions.defaults().faults(faults.fork(w)), ex -> { }));
                }
                try {
                    new Gradients(17, workers, elements).runExactRounds(udpWorkers, 3, "switch process");
                    final HttpResponse<String> metrics = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                        URI.create("http://127.0.0.1:" + metricsPort + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
                    assertThat(metrics.body()).contains("serene_switch_jobs 1.0", "serene_job_workers{job=\"9\"} 3.0");
                    final Process show = serene("control", "show", "--switch", "127.0.0.1:" + controlPort, "--job", "9", "--token-file",
                        token.toString());
                    final String shown = new String(show.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                    assertThat(show.waitFor(60, TimeUnit.SECONDS)).isTrue();
                    assertThat(shown).contains("job 9: R=2");
                } finally {
                    udpWorkers.forEach(WorkerHost::close);
                }
            }
        } finally {
            process.destroy();
            assertThat(process.waitFor(10, TimeUnit.SECONDS)).as("switch stops on SIGTERM").isTrue();
        }
    }

    @Test
    @Timeout(120)
    void aSwitchOnEveryAddressAnswersAWorkerFromTheAddressItWasGiven() throws Exception {
        // the switch binds every address (the default); the worker is told 127.0.1.1, one of this host's
        // addresses but not the one a reply's route picks: it used to drop the answer as a stranger's and fail
        final Process process = serene("switch", "--port", "0", "--stats-seconds", "0");
        try {
            final BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            int port = -1;
            for (String line; port < 0 && (line = out.readLine()) != null; ) {
                final Matcher m = LISTENING.matcher(line);
                if (m.find()) {
                    port = Integer.parseInt(m.group(1));
                }
            }
            assertThat(port).isPositive();
            try (UdpTransport loop = UdpTransport.create(1, true)) {
                final List<WorkerHost> udpWorkers = new ArrayList<>();
                for (int w = 0; w < 2; w++) {
                    udpWorkers.add(WorkerHost.start(new WorkerContext().jobId(4).workerId(w).workers(2).elementsPerRound(1_000),
                        new InetSocketAddress(w == 0 ? "127.0.1.1" : "127.0.0.1", port), new InetSocketAddress("127.0.0.1", 0), loop,
                        UdpOptions.defaults(), ex -> { }));
                }
                try {
                    new Gradients(4, 2, 1_000).runExactRounds(udpWorkers, 3, "a switch on every address");
                } finally {
                    udpWorkers.forEach(WorkerHost::close);
                }
            }
        } finally {
            process.destroy();
            assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
        }
    }

    @Test
    @Timeout(60)
    void badFlagsGetAClearMessageAndExitCode() throws Exception {
        final Process process = serene("switch", "--budget", "10");
        final String output = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).isEqualTo(2);
        assertThat(output).contains("budgetBytes 10 is below the minimum").doesNotContain("Exception");
        final Process unknown = serene("switch", "--no-such-flag");
        final String unknownOutput = new String(unknown.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(unknown.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(unknown.exitValue()).isEqualTo(2);
        assertThat(unknownOutput).contains("Unknown option: '--no-such-flag'");
        for (final String[] bad : List.of(new String[] {"--control-port", "0", "--control-bind", "0.0.0.0"},
            new String[] {"--metrics-port", "70000"}, new String[] {"--job-lease-seconds", "-1"}, new String[] {"--stall-seconds", "x"},
            new String[] {"--control-port", "0", "--control-cert", "/nonexistent.pem"}, new String[] {"--also-udp"})) {
            final List<String> args = new ArrayList<>(List.of("switch", "--port", "0"));
            args.addAll(List.of(bad));
            final Process p = serene(args.toArray(new String[0]));
            final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(p.exitValue()).as(String.join(" ", bad) + ": " + err).isEqualTo(2);
            assertThat(err).as(String.join(" ", bad)).isNotBlank().doesNotContain("Exception").doesNotContain("\tat ");
        }
    }

    @Test
    @Timeout(120)
    void workersOnTheSwitchsHostAggregateExactlyOverSharedMemoryWithLoss(@TempDir final Path dir) throws Exception {
        final Path link = dir.resolve("serene-shm");
        final Process process = serene("switch", "--shm", link.toString(), "--budget", "8388608", "--stats-seconds", "0");
        try {
            final BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            final String first = out.readLine();
            final String listening = out.readLine();
            assertThat(first).contains("switch memory");
            assertThat(listening).contains("switch listening on shared memory shm:" + link);
            final int workers = 3;
            final int elements = 20_000;
            final FaultInjector faults = new FaultInjector(23, 0.05, 0.02, 0.02);
            try (ShmTransport loop = ShmTransport.create(1)) {
                final List<WorkerHost> shmWorkers = new ArrayList<>();
                for (int w = 0; w < workers; w++) {
                    shmWorkers.add(WorkerHost.connect(new WorkerContext().jobId(4).workerId(w).workers(workers).elementsPerRound(elements),
                        link, loop, ShmOptions.defaults().faults(faults.fork(w)), ex -> { }));
                }
                try {
                    assertThat(shmWorkers.get(0).host().kind()).isEqualTo("shm");
                    new Gradients(23, workers, elements).runExactRounds(shmWorkers, 3, "switch process over shared memory");
                    try (var files = Files.list(link)) {
                        assertThat(files.count()).as("the switch's control ring and broadcast buffer, and two rings per worker, one each way")
                            .isEqualTo(2 + 2 * workers);
                    }
                } finally {
                    shmWorkers.forEach(WorkerHost::close);
                }
            }
            try (var files = Files.list(link)) {
                assertThat(files.map(f -> f.getFileName().toString())).as("each worker removed both its rings")
                    .containsExactlyInAnyOrder("switch.ring", "switch.bcast");
            }
        } finally {
            process.destroy();
            process.waitFor(10, TimeUnit.SECONDS);
        }
        assertThat(link.resolve("switch.ring")).as("the switch removed its ring on the way out").doesNotExist();
        assertThat(link.resolve("switch.bcast")).as("and its broadcast buffer").doesNotExist();
    }

    private static Process serene(final String... args) throws Exception {
        final List<String> command = new ArrayList<>();
        command.add(System.getProperty("java.home") + "/bin/java");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("io.serene.harness.cli.Serene");
        command.addAll(List.of(args));
        return new ProcessBuilder(command).start();
    }
}
