package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Assumptions;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code serene} commands as separate JVMs, with the flags training workers need (DJL offline, one thread). */
final class SereneProcess {
    private SereneProcess() {
    }

    static Process start(final String... args) throws Exception {
        return start(Map.of(), args);
    }

    /** Starts a command with extra environment variables (a launcher's RANK, WORLD_SIZE and so on). */
    static Process start(final Map<String, String> env, final String... args) throws Exception {
        return start(List.of(), env, args);
    }

    /** Starts a command under a prefix (e.g. {@code ip netns exec NS}: in another network namespace). */
    static Process startIn(final List<String> prefix, final String... args) throws Exception {
        return start(prefix, Map.of(), args);
    }

    private static Process start(final List<String> prefix, final Map<String, String> env, final String... args) throws Exception {
        final List<String> command = new ArrayList<>(prefix);
        command.add(System.getProperty("java.home") + "/bin/java");
        command.add("-Xmx512m");
        command.add("-Dai.djl.offline=true");
        command.add("-Dai.djl.pytorch.num_threads=1");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add("io.serene.harness.cli.Serene");
        command.addAll(List.of(args));
        final ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(env);
        return pb.start();
    }

    /** Runs a command that must succeed within 200 s (a {@code --json} one); returns its whole standard output. */
    static String expectSuccess(final List<String> args) throws Exception {
        final Process p = start(args.toArray(new String[0]));
        final String stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(200, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(stdout).isZero();
        return stdout;
    }

    /** Skips the test, saying what to install, without PyTorch's gloo at /usr/bin/python3 (the baseline's). */
    static void assumeGloo() throws Exception {
        final Process probe = new ProcessBuilder("/usr/bin/python3", "-c", "import torch.distributed as d; assert d.is_gloo_available()")
            .redirectErrorStream(true).start();
        probe.getInputStream().readAllBytes();
        Assumptions.assumeTrue(probe.waitFor(60, TimeUnit.SECONDS) && probe.exitValue() == 0,
            "no PyTorch with gloo at /usr/bin/python3 (apt-get install python3-torch): its gloo baseline check skipped");
    }

    /** The JSON a {@code --json} command's output ends with. */
    static JsonNode lastJsonLine(final String stdout) throws Exception {
        final String[] lines = stdout.strip().split("\n");
        return new ObjectMapper().readTree(lines[lines.length - 1]);
    }

    /** Runs a command that must fail with {@code code} and a one-line message, never a stack trace. */
    static void expectFailure(final int code, final String message, final String... args) throws Exception {
        expectFailure(code, message, Map.of(), args);
    }

    /** The same with extra environment variables. */
    static void expectFailure(final int code, final String message, final Map<String, String> env, final String... args)
        throws Exception {
        final Process p = start(env, args);
        final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(err).isEqualTo(code);
        assertThat(err).contains(message).doesNotContain("Exception");
    }
}
