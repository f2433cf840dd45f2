package io.serene.launch;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.sync.SyncConfig;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The switch a DDP run through Serene's hook aggregates in: this process's pipeline on a loopback
 * UDP port, every new job under one sync config; the ranks' agents are started by their clients
 * with {@link #agentCommand()}.
 */
final class HookSwitch implements AutoCloseable {
    private final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
    private final UdpTransport loop;
    private final UdpHost host;

    HookSwitch(final SyncConfig sync) {
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(16 << 20).defaultSync(sync).conclude(), errors::add);
        loop = UdpTransport.create(1, true);
        host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
    }

    String address() {
        return "127.0.0.1:" + host.localAddress().getPort();
    }

    /** This JVM's java and class path running {@code serene} (the agent's options are appended), small: one per rank. */
    static String agentCommand() {
        return String.join(" ", System.getProperty("java.home") + "/bin/java", "-Xmx1g", "-XX:+UseSerialGC",
            "-cp", System.getProperty("java.class.path"), "io.serene.harness.cli.Serene");
    }

    /** An error the switch's pipeline reported fails the run. */
    void checkErrors() {
        if (!errors.isEmpty()) {
            throw new IllegalStateException("the switch failed: " + errors.get(0));
        }
    }

    @Override
    public void close() {
        host.close();
        loop.close();
    }
}
