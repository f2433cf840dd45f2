package io.serene.worker;

import io.serene.transport.ShmOptions;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

/**
 * A worker process's way to its switch: the transport its switch address names ({@code HOST:PORT}
 * over UDP, or {@code shm:DIRECTORY} on the switch's host), and the connections made on it (a
 * worker whose job was lost joins again on a new one). {@code serene worker} runs one.
 */
public final class WorkerNode implements AutoCloseable {
    private final String switchAddress;
    /** Shared memory to a switch on this host (its directory), or UDP to its address: one of each pair is null. */
    private final ShmTransport shm;
    private final Path shmDirectory;
    private final UdpTransport udp;
    private final InetSocketAddress target;

    private WorkerNode(final String switchAddress, final ShmTransport shm, final Path shmDirectory, final UdpTransport udp,
                       final InetSocketAddress target) {
        this.switchAddress = switchAddress;
        this.shm = shm;
        this.shmDirectory = shmDirectory;
        this.udp = udp;
        this.target = target;
    }

    /** A node for the switch at {@code switchAddress}; a malformed one is an error naming the option it came from. */
    public static WorkerNode to(final String option, final String switchAddress) {
        if (ShmTransport.isShm(switchAddress)) {
            return new WorkerNode(switchAddress, ShmTransport.create(1), ShmTransport.directoryOf(switchAddress), null, null);
        }
        final InetSocketAddress parsed = parseHostPort(option, switchAddress);
        return new WorkerNode(switchAddress, null, null, UdpTransport.create(1, true),
            new InetSocketAddress(parsed.getHostString(), parsed.getPort()));
    }

    /** Parses {@code HOST:PORT} given to {@code option} (unresolved); anything else is a clear error naming the option. */
    public static InetSocketAddress parseHostPort(final String option, final String address) {
        final int colon = address.lastIndexOf(':');
        try {
            if (colon > 0) {
                return InetSocketAddress.createUnresolved(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
            }
        } catch (final IllegalArgumentException ex) {
            // a port that is not a number or out of range: the message below
        }
        throw new IllegalArgumentException(option + " must be HOST:PORT, was '" + address + "'");
    }

    /** A new connection to the switch for {@code context}, joining its job; errors of its engine go to {@code errors}. */
    public WorkerHost connect(final WorkerContext context, final Consumer<Throwable> errors) {
        return shm != null
            ? WorkerHost.connect(context, shmDirectory, shm, ShmOptions.defaults(), errors)
            : WorkerHost.start(context, target, new InetSocketAddress(0), udp, UdpOptions.defaults().faults(context.link().faults(context.workerId())),
                errors);
    }

    /** Waits until {@code worker} (worker {@code id} of job {@code job}) joined, at most {@code timeoutSeconds}; else an error saying so. */
    public void awaitJoin(final WorkerHost worker, final int id, final int job, final int timeoutSeconds) throws InterruptedException {
        try {
            worker.joined().get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            throw new IllegalStateException("worker " + id + ": no join job " + job + " at " + switchAddress + " within "
                + timeoutSeconds + " s (is the switch at " + switchAddress + " running?)");
        } catch (final ExecutionException ex) {
            throw new IllegalStateException("worker " + id + ": join job " + job + " at " + switchAddress + " failed: "
                + ex.getCause().getMessage());
        }
    }

    @Override
    public void close() {
        if (shm != null) {
            shm.close();
        } else {
            udp.close();
        }
    }
}
