package io.serene.systemtests;

import io.serene.transport.FaultInjector;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.UdpWorker;
import io.serene.worker.WorkerContext;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** `serene switch` as its own process; workers in this process reach it over UDP. */
@Tag("slow")
class SwitchProcessSystemTest {
    private static final Pattern LISTENING = Pattern.compile("switch listening on udp .*:(\\d+)");

    @Test
    @Timeout(120)
    void workersAggregateExactlyThroughASwitchProcess() throws Exception {
        final Process process = serene("switch", "--port", "0", "--bind", "127.0.0.1", "--budget", "8388608",
            "--stats-seconds", "0");
        try {
            final BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            int port = -1;
            final List<String> lines = new ArrayList<>();
            for (String line; port < 0 && (line = out.readLine()) != null; ) {
                lines.add(line);
                final Matcher m = LISTENING.matcher(line);
                if (m.find()) {
                    port = Integer.parseInt(m.group(1));
                }
            }
            assertThat(port).as("switch output: %s", lines).isPositive();
            assertThat(lines.get(0)).contains("switch memory").contains("8388608");

            final int workers = 3;
            final int elements = 20_000;
            final FaultInjector faults = new FaultInjector(17, 0.05, 0, 0);
            try (UdpTransport loop = UdpTransport.create(1, true)) {
                final List<UdpWorker> udpWorkers = new ArrayList<>();
                for (int w = 0; w < workers; w++) {
                    udpWorkers.add(UdpWorker.start(new WorkerContext().jobId(9).workerId(w).workers(workers)
                            .elementsPerRound(elements), new InetSocketAddress("127.0.0.1", port),
                        new InetSocketAddress("127.0.0.1", 0), loop, UdpOptions.defaults().faults(faults.fork(w)), ex -> { }));
                }
                try {
                    new Gradients(17, workers, elements).runExactRounds(udpWorkers, 3, "switch process");
                } finally {
                    udpWorkers.forEach(UdpWorker::close);
                }
            }
        } finally {
            process.destroy();
            assertThat(process.waitFor(10, TimeUnit.SECONDS)).as("switch stops on SIGTERM").isTrue();
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
