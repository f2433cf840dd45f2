package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.sync.SyncConfig;
import io.serene.training.data.FashionMnist;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import org.junit.jupiter.api.Assumptions;
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
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Switch and workers on separate hosts: the switch in this network namespace on a bridge, each
 * worker process in a namespace of its own behind a veth pair, as separate machines on a LAN would
 * be. BSP training over it ends with the same model, bit for bit, as the same run on loopback.
 * Needs root and iproute2 (CI runs as root); skipped with a message otherwise. Tagged slow.
 */
@Tag("slow")
class MultiHostSystemTest {
    private static final String BRIDGE = "srn-br0";
    private static final String SWITCH_IP = "10.199.7.1";
    /** A second address of the switch's host on the same network: answers to it used to come from the first. */
    private static final String SECOND_IP = "10.199.7.2";
    private static final Pattern HASH = Pattern.compile("\"modelHash\":\"([0-9a-f]{64})\"");

    @Test
    @Timeout(300)
    void workersInTheirOwnNamespacesTrainToTheLoopbackModel(@TempDir final Path dir) throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")) && Files.isExecutable(Path.of("/usr/sbin/ip")),
            "multi-host test skipped: it needs root and iproute2 (/usr/sbin/ip) to make network namespaces");
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final List<String> namespaces = List.of("srn-w0", "srn-w1");
        cleanUp(namespaces);
        try {
            sh("ip", "link", "add", BRIDGE, "type", "bridge");
            sh("ip", "addr", "add", SWITCH_IP + "/24", "dev", BRIDGE);
            sh("ip", "addr", "add", SECOND_IP + "/24", "dev", BRIDGE);
            sh("ip", "link", "set", BRIDGE, "up");
            for (int w = 0; w < namespaces.size(); w++) {
                final String ns = namespaces.get(w);
                final String host = "srn-v" + w;
                final String peer = "srn-p" + w;
                sh("ip", "netns", "add", ns);
                sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer);
                sh("ip", "link", "set", host, "master", BRIDGE);
                sh("ip", "link", "set", host, "up");
                sh("ip", "link", "set", peer, "netns", ns);
                sh("ip", "netns", "exec", ns, "ip", "addr", "add", "10.199.7." + (10 + w) + "/24", "dev", peer);
                sh("ip", "netns", "exec", ns, "ip", "link", "set", peer, "up");
                sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
            }
            final List<String> apart = train(dir, SWITCH_IP, List.of(SWITCH_IP, SWITCH_IP), namespaces);
            final List<String> loopback = train(dir, "127.0.0.1", List.of("127.0.0.1", "127.0.0.1"), null);
            assertThat(apart.get(0)).as("BSP: both workers hold the same model").isEqualTo(apart.get(1));
            assertThat(apart).as("the same model as on loopback").isEqualTo(loopback);
            // the switch on every address, each worker told another of them: each is answered from the one it was given
            final List<String> twoAddresses = train(dir, "0.0.0.0", List.of(SWITCH_IP, SECOND_IP), namespaces);
            assertThat(twoAddresses).as("the same model through either address").isEqualTo(loopback);
        } finally {
            cleanUp(namespaces);
        }
    }

    /** Removes what a run (this one, or one that died) made. */
    private static void cleanUp(final List<String> namespaces) throws Exception {
        for (int w = 0; w < namespaces.size(); w++) {
            quiet("ip", "netns", "del", namespaces.get(w));
            quiet("ip", "link", "del", "srn-v" + w);
        }
        quiet("ip", "link", "del", BRIDGE);
    }

    /**
     * Two workers against a switch bound to {@code address}, worker w told {@code targets[w]}, in the
     * namespaces given (null: this one); their model hashes.
     */
    private static List<String> train(final Path dir, final String address, final List<String> targets, final List<String> namespaces)
        throws Exception {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(8 << 20)
            .defaultSync(SyncConfig.bsp()).conclude(), errors::add);
        try (UdpTransport loop = UdpTransport.create(1, true);
             UdpHost host = loop.bind(pipeline, new InetSocketAddress(address, 0), UdpOptions.defaults())) {
            final List<Process> workers = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                final List<String> prefix = namespaces == null ? List.of() : List.of("ip", "netns", "exec", namespaces.get(w));
                final String target = targets.get(w) + ":" + host.localAddress().getPort();
                workers.add(SereneProcess.startIn(prefix, "worker", "--switch", target, "--id", "" + w, "--workers", "2",
                    "--rounds", "40", "--batch", "32", "--eval-every", "20", "--data", dir.toString(), "--seed", "9",
                    "--stragglers", "persistent:1:x2"));
            }
            final List<String> hashes = new ArrayList<>();
            for (final Process p : workers) {
                final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                final String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
                assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
                assertThat(p.exitValue()).as(out + err).isZero();
                final Matcher m = HASH.matcher(out);
                assertThat(m.find()).as(out).isTrue();
                hashes.add(m.group(1));
            }
            assertThat(errors).isEmpty();
            return hashes;
        }
    }

    private static void sh(final String... command) throws Exception {
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0).as(String.join(" ", command) + ": " + out).isTrue();
    }

    private static void quiet(final String... command) throws Exception {
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        p.waitFor(30, TimeUnit.SECONDS);
    }
}
