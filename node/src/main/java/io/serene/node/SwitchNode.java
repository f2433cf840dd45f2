package io.serene.node;

import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.PacketEndpoint;
import io.serene.transport.PacketHost;
import io.serene.transport.ShmOptions;
import io.serene.transport.ShmServer;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpBridge;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.function.IntFunction;

/**
 * A running switch: its pipeline served on a link (UDP, shared memory, or both), with its control
 * service, monitor and optional /metrics and control server. {@code serene switch} and
 * {@code serene train} run their switch as one; {@link #builder} says how.
 */
public final class SwitchNode implements AutoCloseable {
    private final SwitchPipeline pipeline;
    private final AutoCloseable transport;
    /** A data plane under the pipeline (the XDP switch), closed with the node; or null. */
    private final AutoCloseable below;
    private final PacketHost host;
    private final UdpTransport bridgeTransport;
    private final UdpBridge bridge;
    private final Path freshDirectory;
    private final SwitchControlService control;
    private final SwitchMonitor monitor;
    private final SwitchMetrics metrics;
    private final Builder plan;
    private ControlServer server;

    private SwitchNode(final Builder b) throws IOException {
        this.plan = b;
        this.pipeline = b.pipeline;
        AutoCloseable opened = null;
        AutoCloseable below = null;
        PacketHost served = null;
        UdpTransport bridged = null;
        UdpBridge link = null;
        try {
            if (b.shm != null) {
                final ShmTransport shm = ShmTransport.create(1);
                opened = shm;
                served = shm.serve(pipeline, b.shm, ShmOptions.defaults());
                if (b.alsoUdp) {
                    bridged = UdpTransport.create(1, b.epoll);
                    link = UdpBridge.attach((ShmServer) served, bridged, new InetSocketAddress(b.bind, b.port), UdpOptions.defaults());
                }
            } else {
                final UdpTransport udp = UdpTransport.create(1, b.epoll);
                opened = udp;
                final UdpHost[] bound = new UdpHost[1];
                final PacketEndpoint endpoint = b.below == null ? pipeline : b.below.open(pipeline, port -> bound[0].peerAddress(port));
                below = endpoint instanceof AutoCloseable c && endpoint != pipeline ? c : null;
                served = udp.bind(endpoint, new InetSocketAddress(b.bind, b.port), UdpOptions.defaults());
                bound[0] = (UdpHost) served;
            }
        } catch (final IOException | RuntimeException ex) {
            closeQuietly(link, bridged, served, opened, below);
            removeFresh(b);
            throw ex;
        }
        this.below = below;
        this.transport = opened;
        this.host = served;
        this.bridgeTransport = bridged;
        this.bridge = link;
        this.freshDirectory = b.freshShm ? b.shm : null;
        this.control = new SwitchControlService(host::call, pipeline, b.stalls, b.log).silence(b.silence);
        this.monitor = new SwitchMonitor(pipeline, b.monitorEveryMs, b.stalls, b.silence, b.log);
        this.metrics = b.metricsPort < 0 ? null : SwitchMetrics.serve(monitor, b.metricsBind, b.metricsPort);
    }

    /** A switch for {@code pipeline}: by default UDP on 127.0.0.1 at a free port, no metrics, no control server. */
    public static Builder builder(final SwitchPipeline pipeline) {
        return new Builder(pipeline);
    }

    /**
     * A data plane under the pipeline: the endpoint the UDP host serves in its place (the XDP switch), given
     * the pipeline and the address of each of the host's peers (asked on the host's thread). Closed with the
     * node if it is {@link AutoCloseable}.
     */
    @FunctionalInterface
    public interface Below {
        PacketEndpoint open(SwitchPipeline pipeline, IntFunction<InetSocketAddress> peers) throws IOException;
    }

    /** How a switch is served. */
    public static final class Builder {
        private final SwitchPipeline pipeline;
        private String bind = "127.0.0.1";
        private int port;
        private boolean epoll = true;
        private Path shm;
        private boolean freshShm;
        private boolean alsoUdp;
        private StallWatch stalls = new StallWatch(0);
        private SilenceWatch silence = new SilenceWatch(0);
        private Consumer<String> log = line -> { };
        private String metricsBind = "127.0.0.1";
        private int metricsPort = -1;
        private String controlBind = "127.0.0.1";
        private int controlPort = -1;
        private ControlAccess access = ControlAccess.LOCAL;
        private long monitorEveryMs = 100;
        private Below below;

        private Builder(final SwitchPipeline pipeline) {
            this.pipeline = pipeline;
        }

        /** UDP on {@code bind:port} (port 0: a free one), over native epoll unless {@code epoll} is false. */
        public Builder udp(final String address, final int udpPort, final boolean nativeEpoll) {
            this.bind = address;
            this.port = udpPort;
            this.epoll = nativeEpoll;
            return this;
        }

        /** UDP served through a data plane under the pipeline ({@link Below}). */
        public Builder below(final Below dataPlane) {
            this.below = dataPlane;
            return this;
        }

        /** Shared memory in {@code directory} (workers on this host join {@code shm:DIRECTORY}). */
        public Builder shm(final Path directory) {
            this.shm = directory;
            return this;
        }

        /** Shared memory in a fresh directory under /dev/shm, removed when the node closes. */
        public Builder freshShm() {
            this.shm = ShmTransport.newDirectory("serene-");
            this.freshShm = true;
            return this;
        }

        /** Beside shared memory, UDP on the address and port of {@link #udp} too (one job, both links). */
        public Builder alsoUdp(final boolean both) {
            this.alsoUdp = both;
            return this;
        }

        /** The stall and silence watches the monitor and the control service report with. */
        public Builder watches(final StallWatch stallWatch, final SilenceWatch silenceWatch) {
            this.stalls = stallWatch;
            this.silence = silenceWatch;
            return this;
        }

        /** Where the node's lines go (stalls, silences, control writes). */
        public Builder log(final Consumer<String> lines) {
            this.log = lines;
            return this;
        }

        /** Prometheus /metrics on {@code bind:port} (port 0: a free one; negative: none). */
        public Builder metrics(final String address, final int metricsAt) {
            this.metricsBind = address;
            this.metricsPort = metricsAt;
            return this;
        }

        /** The gRPC control server on {@code bind:port} (negative: none), under an access rule. */
        public Builder control(final String address, final int controlAt, final ControlAccess rule) {
            this.controlBind = address;
            this.controlPort = controlAt;
            this.access = rule;
            return this;
        }

        /** How often the monitor takes a view of the switch (default 100 ms). */
        public Builder monitorEvery(final long ms) {
            this.monitorEveryMs = ms;
            return this;
        }

        /** Serves the switch (its monitor and control server wait for {@link SwitchNode#start}). */
        public SwitchNode open() throws IOException {
            if (alsoUdp && shm == null) {
                throw new IllegalArgumentException("--also-udp serves UDP besides shared memory: it needs --shm DIR");
            }
            return new SwitchNode(this);
        }
    }

    /** Starts the monitor (listeners added before see every view) and the control server, if asked for. */
    public SwitchNode start() throws IOException {
        monitor.start();
        if (plan.controlPort >= 0) {
            server = ControlServer.start(control, plan.controlBind, plan.controlPort, plan.access);
        }
        return this;
    }

    public SwitchPipeline pipeline() {
        return pipeline;
    }

    public PacketHost host() {
        return host;
    }

    public SwitchMonitor monitor() {
        return monitor;
    }

    /** The control server, once started (null: none). */
    public ControlServer controlServer() {
        return server;
    }

    /** The metrics server (null: none). */
    public SwitchMetrics metrics() {
        return metrics;
    }

    /** The switch's address as a worker's {@code --switch} takes it: HOST:PORT or shm:DIRECTORY. */
    public String address() {
        return host instanceof UdpHost udp ? udp.localAddress().getHostString() + ":" + udp.localAddress().getPort()
            : ShmTransport.SCHEME + plan.shm;
    }

    /** For the console: "udp ADDRESS (KIND)" or "shared memory shm:DIR", with a bridged UDP address. */
    public String describe() {
        return host instanceof UdpHost udp ? "udp " + udp.localAddress() + " (" + host.kind() + ")"
            : "shared memory " + ShmTransport.SCHEME + plan.shm + (bridge != null ? " and udp " + bridge.localAddress() : "");
    }

    /** Whether UDP is served on an address other hosts can reach (not loopback): directly, or bridged. */
    public boolean servesBeyondLoopback() {
        final InetSocketAddress udp = host instanceof UdpHost u ? u.localAddress() : bridge != null ? bridge.localAddress() : null;
        return udp != null && !udp.getAddress().isLoopbackAddress();
    }

    @Override
    public void close() {
        closeQuietly(server, metrics, monitor, control, bridge, bridgeTransport, host, transport, below);
        removeFresh(plan);
    }

    private static void removeFresh(final Builder b) {
        if (b.freshShm) {
            ShmTransport.removeDirectory(b.shm);
        }
    }

    private static void closeQuietly(final AutoCloseable... parts) {
        RuntimeException first = null;
        for (final AutoCloseable part : parts) {
            if (part == null) {
                continue;
            }
            try {
                part.close();
            } catch (final Exception ex) {
                if (first == null) {
                    first = ex instanceof RuntimeException r ? r : new IllegalStateException(ex);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
