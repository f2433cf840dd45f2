package io.serene.xdp;

import java.io.IOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A switch with a port per worker on this host: one network namespace per worker, joined to the switch
 * by a veth pair whose switch end (in this namespace) carries the switch's address, 10.77.S.1, and a route
 * to the worker's, 10.77.S.(w + 2). The XDP program sits on the switch ends; the Java switch binds the
 * switch address here and answers through the same ports. {@link #close} removes it all (also at JVM exit,
 * Ctrl-C included).
 */
public final class XdpNetwork implements AutoCloseable {
    /** The ports' MTU, the largest an IPv4 packet may be: a chunk of the most elements fits whole. */
    static final int MTU = 65535;
    private final String name;
    private final int subnet;
    private final int workers;
    private final List<XdpPort> ports = new ArrayList<>();
    private final Thread cleanup;
    private boolean closed;

    private XdpNetwork(final String name, final int subnet, final int workers) {
        this.name = name;
        this.subnet = subnet;
        this.workers = workers;
        this.cleanup = new Thread(this::remove, "xdp-network-cleanup");
    }

    /** Creates the namespaces and ports of a switch for {@code workers} workers. */
    public static XdpNetwork create(final int workers) throws IOException {
        final String why = XdpBuild.missing();
        if (why != null) {
            throw new IOException(why);
        }
        final long pid = ProcessHandle.current().pid();
        final int subnet = (int) (pid % 200) + 20;
        final XdpNetwork net = new XdpNetwork("sx" + Long.toString(pid % 46656, 36), subnet, workers);
        Runtime.getRuntime().addShutdownHook(net.cleanup);
        try {
            for (int w = 0; w < workers; w++) {
                net.addPort(w);
            }
        } catch (final IOException | RuntimeException ex) {
            net.close();
            throw ex;
        }
        return net;
    }

    private void addPort(final int w) throws IOException {
        final String ns = namespace(w);
        final String port = name + "p" + w;
        ip("netns", "add", ns);
        ip("link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns);
        ip("addr", "add", switchAddress().getHostAddress() + "/32", "dev", port);
        // a chunk's packet whole (8,192 elements are 32 KiB), as jumbo frames carry it on a wire
        ip("link", "set", port, "mtu", "" + MTU);
        ip("-n", ns, "link", "set", "eth0", "mtu", "" + MTU);
        ip("link", "set", port, "up");
        ip("-n", ns, "addr", "add", workerAddress(w).getHostAddress() + "/24", "dev", "eth0");
        // a super-packet (UDP GSO) would cross the veth whole: the pipeline takes packets one at a time, as from a wire
        ip("-n", ns, "link", "set", "eth0", "gso_max_segs", "1");
        ip("-n", ns, "link", "set", "eth0", "up");
        ip("-n", ns, "link", "set", "lo", "up");
        ip("route", "add", workerAddress(w).getHostAddress() + "/32", "dev", port);
        final int ifindex = Integer.parseInt(Files.readString(Path.of("/sys/class/net", port, "ifindex")).trim());
        final byte[] own = mac(Files.readString(Path.of("/sys/class/net", port, "address")));
        final byte[] peer = mac(run(List.of("ip", "netns", "exec", ns, "cat", "/sys/class/net/eth0/address")));
        ports.add(new XdpPort(ifindex, own, peer));
    }

    /** The switch's address on every port. */
    public InetAddress switchAddress() {
        return address(1);
    }

    /** Worker w's address, in its namespace. */
    public InetAddress workerAddress(final int w) {
        return address(w + 2);
    }

    private InetAddress address(final int host) {
        try {
            return InetAddress.getByAddress(new byte[] {10, 77, (byte) subnet, (byte) host});
        } catch (final UnknownHostException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** Worker w's network namespace. */
    public String namespace(final int w) {
        return name + "-w" + w;
    }

    /** The command prefix that runs a program in worker w's namespace. */
    public List<String> inNamespace(final int w) {
        return List.of("ip", "netns", "exec", namespace(w));
    }

    /** The switch's ports' interface indexes. */
    public List<Integer> ifindexes() {
        return ports.stream().map(XdpPort::ifindex).toList();
    }

    /** The port a worker's address sits behind, or null. */
    public XdpPort portOf(final InetAddress worker) {
        for (int w = 0; w < workers && w < ports.size(); w++) {
            if (workerAddress(w).equals(worker)) {
                return ports.get(w);
            }
        }
        return null;
    }

    public String describe() {
        return workers + " worker namespaces " + namespace(0) + ".. on ports " + name + "p0.. of switch " + switchAddress().getHostAddress();
    }

    private static byte[] mac(final String text) {
        return HexFormat.of().parseHex(text.trim().replace(":", ""));
    }

    private synchronized void remove() {
        if (closed) {
            return;
        }
        closed = true;
        for (int w = 0; w < workers; w++) {
            // the namespace takes its veth end, and with it the pair and its route
            quietly(List.of("ip", "netns", "del", namespace(w)));
            quietly(List.of("ip", "link", "del", name + "p" + w));
        }
    }

    @Override
    public void close() {
        remove();
        try {
            Runtime.getRuntime().removeShutdownHook(cleanup);
        } catch (final IllegalStateException ignored) {
            // shutting down: the hook runs anyway
        }
    }

    private static void ip(final String... args) throws IOException {
        final List<String> command = new ArrayList<>(List.of("ip"));
        command.addAll(List.of(args));
        run(command);
    }

    private static String run(final List<String> command) throws IOException {
        final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException(String.join(" ", command) + " failed: " + out.trim());
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + String.join(" ", command), ex);
        }
        return out;
    }

    private static void quietly(final List<String> command) {
        try {
            final Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            p.waitFor(30, TimeUnit.SECONDS);
        } catch (final IOException ex) {
            // nothing left to remove
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }
}
