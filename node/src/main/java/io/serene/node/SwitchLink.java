package io.serene.node;

import io.serene.protocol.PacketEndpoint;
import io.serene.transport.PacketHost;
import io.serene.transport.ShmOptions;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;

import java.net.InetSocketAddress;
import java.nio.file.Path;

/**
 * A switch served for workers on this host, as {@code serene train} launches them: UDP on
 * 127.0.0.1 (a free port), or shared memory in a fresh directory under /dev/shm (removed on close).
 * {@link #address()} is what a worker's {@code --switch} takes.
 */
public final class SwitchLink implements AutoCloseable {
    private final Runnable closeTransport;
    private final PacketHost host;
    private final String address;
    private final Path directory;

    private SwitchLink(final Runnable closeTransport, final PacketHost host, final String address, final Path directory) {
        this.closeTransport = closeTransport;
        this.host = host;
        this.address = address;
        this.directory = directory;
    }

    /** Serves {@code endpoint} on one thread, over shared memory if {@code shm}, else over UDP on 127.0.0.1. */
    public static SwitchLink open(final boolean shm, final PacketEndpoint endpoint) {
        if (!shm) {
            final UdpTransport udp = UdpTransport.create(1, true);
            final UdpHost host = udp.bind(endpoint, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
            return new SwitchLink(udp::close, host, "127.0.0.1:" + host.localAddress().getPort(), null);
        }
        final Path directory = ShmTransport.newDirectory("serene-");
        final ShmTransport transport = ShmTransport.create(1);
        final PacketHost host = transport.serve(endpoint, directory, ShmOptions.defaults());
        return new SwitchLink(transport::close, host, ShmTransport.SCHEME + directory, directory);
    }

    public PacketHost host() {
        return host;
    }

    /** The switch's address as a worker's {@code --switch} takes it: HOST:PORT or shm:DIRECTORY. */
    public String address() {
        return address;
    }

    /** For the console: "udp 127.0.0.1:PORT" or "shm /dev/shm/...". */
    public String describe() {
        return directory == null ? "udp " + address : "shm " + directory;
    }

    @Override
    public void close() {
        host.close();
        closeTransport.run();
        if (directory != null) {
            ShmTransport.removeDirectory(directory);
        }
    }
}
