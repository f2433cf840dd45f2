package io.serene.launch;

import io.serene.node.SwitchNode;
import io.serene.xdp.XdpBuild;
import io.serene.xdp.XdpDimensions;
import io.serene.xdp.XdpDriver;
import io.serene.xdp.XdpNetwork;
import io.serene.xdp.XdpSwitch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The XDP switch of a run ({@code serene train --switch xdp}): the network of worker namespaces, the
 * program under the pipeline, and the prefix that runs each worker in its namespace. Removed, program
 * and namespaces, when the launch ends (and at JVM exit, Ctrl-C included).
 */
public final class XdpPlane implements AutoCloseable {
    private final XdpNetwork network;
    private volatile XdpSwitch below;

    private XdpPlane(final XdpNetwork network) {
        this.network = network;
    }

    /** The run's XDP switch, or null for the Java switch. */
    static XdpPlane open(final RunSettings s) throws IOException {
        return s.xdp() ? create(s.workers()) : null;
    }

    /** An XDP switch with a port (and a network namespace) for each of {@code workers} workers. */
    public static XdpPlane create(final int workers) throws IOException {
        return new XdpPlane(XdpNetwork.create(workers));
    }

    /** The switch served on the network's switch address, with the XDP program under its pipeline (its failures to {@code errors}). */
    public SwitchNode.Builder serve(final SwitchNode.Builder plan, final Consumer<String> log, final Consumer<Throwable> errors) throws IOException {
        return serve(plan, 0, log, errors);
    }

    /** The same on UDP port {@code udpPort} (0: a free one). */
    public SwitchNode.Builder serve(final SwitchNode.Builder plan, final int udpPort, final Consumer<String> log, final Consumer<Throwable> errors)
        throws IOException {
        final int port;
        try (DatagramSocket probe = new DatagramSocket(new InetSocketAddress(network.switchAddress(), udpPort))) {
            port = probe.getLocalPort();
        }
        log.accept("XDP switch: " + network.describe());
        return plan.udp(network.switchAddress().getHostAddress(), port, true).below((pipeline, peers) -> {
            final XdpDriver driver = XdpDriver.start(XdpBuild.build(XdpDimensions.of(pipeline.memory())));
            try {
                below = new XdpSwitch(pipeline, driver, new InetSocketAddress(network.switchAddress(), port), network.ifindexes(), peers,
                    network::portOf, log, errors);
                return below;
            } catch (final IOException | RuntimeException ex) {
                driver.close();
                throw ex;
            }
        });
    }

    /** Worker w's network namespace. */
    public String namespace(final int w) {
        return network.namespace(w);
    }

    /** Worker w's command, in its namespace under the XDP switch ({@code xdp} null: as it is). */
    public static List<String> command(final XdpPlane xdp, final int w, final List<String> command) {
        if (xdp == null) {
            return command;
        }
        final List<String> in = new ArrayList<>(xdp.network.inNamespace(w));
        in.addAll(command);
        return in;
    }

    /** The XDP program's counters (none for the Java switch). */
    public static Map<String, Long> counters(final XdpPlane xdp, final SwitchNode node) throws Exception {
        if (xdp == null || xdp.below == null) {
            return Map.of();
        }
        return node.host().call(() -> {
            try {
                return xdp.below.counters();
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
        }).get(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        network.close();
    }
}
