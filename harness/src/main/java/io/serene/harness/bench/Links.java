package io.serene.harness.bench;

import io.serene.protocol.PacketEndpoint;
import io.serene.transport.FaultInjector;
import io.serene.transport.PacketHost;
import io.serene.transport.ShmHost;
import io.serene.transport.ShmOptions;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;

/**
 * The switch's thread and the workers' (one per worker unless fewer are asked for) and how
 * endpoints get onto them: UDP sockets on 127.0.0.1, or shared-memory rings in a fresh directory
 * under /dev/shm (removed at the end).
 */
final class Links implements AutoCloseable {
    final AllreduceBench.Config config;
    final UdpTransport udpSwitch;
    final UdpTransport udpWorkers;
    final ShmTransport shmSwitch;
    final ShmTransport shmWorkers;
    final Path shmRoot;
    int directories;

    Links(final AllreduceBench.Config config) {
        this.config = config;
        if (config.shm) {
            udpSwitch = null;
            udpWorkers = null;
            shmSwitch = ShmTransport.create(1);
            shmWorkers = ShmTransport.create(config.threadsForWorkers());
            shmRoot = ShmTransport.newDirectory("serene-bench-");
        } else {
            udpSwitch = UdpTransport.create(1, config.preferEpoll);
            udpWorkers = UdpTransport.create(config.threadsForWorkers(), config.preferEpoll);
            shmSwitch = null;
            shmWorkers = null;
            shmRoot = null;
        }
    }

    UdpOptions udp(final FaultInjector faults) {
        return UdpOptions.defaults().gso(config.gso).gro(config.gro).faults(faults);
    }

    /** A server (the switch, the echo server) on the switch's thread. */
    PacketHost serve(final PacketEndpoint endpoint, final FaultInjector faults) {
        if (config.shm) {
            return shmSwitch.serve(endpoint, shmRoot.resolve("link-" + directories++), ShmOptions.defaults().faults(faults));
        }
        return udpSwitch.bind(endpoint, new InetSocketAddress("127.0.0.1", 0), udp(faults));
    }

    /** A client of {@code server} on the workers' thread; the server is its port 0. */
    PacketHost connect(final PacketEndpoint endpoint, final PacketHost server, final FaultInjector faults) {
        if (config.shm) {
            return shmWorkers.connect(endpoint, directoryOf(server), ShmOptions.defaults().faults(faults));
        }
        return udpWorkers.bind(endpoint, new InetSocketAddress("127.0.0.1", 0), udp(faults), ((UdpHost) server).localAddress());
    }

    WorkerHost worker(final WorkerContext context, final PacketHost server, final FaultInjector faults,
                      final List<Throwable> errors) {
        if (config.shm) {
            return WorkerHost.connect(context, directoryOf(server), shmWorkers, ShmOptions.defaults().faults(faults),
                errors::add);
        }
        return WorkerHost.start(context, ((UdpHost) server).localAddress(), new InetSocketAddress("127.0.0.1", 0),
            udpWorkers, udp(faults), errors::add);
    }

    private static Path directoryOf(final PacketHost server) {
        return ((ShmHost) server).directory();
    }

    @Override
    public void close() {
        if (config.shm) {
            shmWorkers.close();
            shmSwitch.close();
            ShmTransport.removeDirectory(shmRoot);
        } else {
            udpWorkers.close();
            udpSwitch.close();
        }
    }
}
