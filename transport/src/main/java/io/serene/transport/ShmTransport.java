package io.serene.transport;

import io.serene.protocol.PacketEndpoint;
import org.agrona.concurrent.BackoffIdleStrategy;
import org.agrona.concurrent.IdleStrategy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;

/**
 * Shared memory between processes on one host: each {@link ShmHost} reads memory-mapped rings and
 * writes into its peers' (one-to-one {@link SpscRing}s per peer and direction, and a many-to-one
 * control ring of Agrona's for hellos and goodbyes). Owns the polling
 * threads; each polls its hosts' rings, runs their timers and tasks, and backs off when idle (spin,
 * yield, then park up to {@link #MAX_PARK_NS}), so an idle host costs little CPU and a busy one no
 * system call.
 * <p>
 * Addresses: {@code shm:<directory>}, e.g. {@code shm:/dev/shm/serene-7000}. The serving host (a
 * switch) writes {@code switch.ring} there, each connecting host (a worker) its own
 * {@code peer-<id>.up} and {@code peer-<id>.ring}.
 */
public final class ShmTransport implements AutoCloseable {
    /** The prefix of a shared-memory address. */
    public static final String SCHEME = "shm:";
    /** The longest an idle polling thread sleeps: the latency a packet arriving then may see. */
    static final long MAX_PARK_NS = 50_000;

    private final Poller[] pollers;
    private int next;

    private ShmTransport(final int threads) {
        pollers = new Poller[threads];
        for (int i = 0; i < threads; i++) {
            pollers[i] = new Poller("serene-shm-" + i);
        }
    }

    /** A transport with {@code threads} polling threads; hosts are spread over them in turn. */
    public static ShmTransport create(final int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, was " + threads);
        }
        return new ShmTransport(threads);
    }

    /** Whether an address names a shared-memory link ({@code shm:<directory>}). */
    public static boolean isShm(final String address) {
        return address != null && address.startsWith(SCHEME);
    }

    /** The directory of a {@code shm:<directory>} address; a clear error for anything else. */
    public static Path directoryOf(final String address) {
        if (!isShm(address) || address.length() == SCHEME.length()) {
            throw new IllegalArgumentException("a shared-memory address is shm:<directory>, e.g. shm:/dev/shm/serene-7000; was "
                + address);
        }
        return Path.of(address.substring(SCHEME.length()));
    }

    /** A new directory for a link, under /dev/shm where the host has it (memory, not disk), else the temp directory. */
    public static Path newDirectory(final String prefix) {
        try {
            final Path devShm = Path.of("/dev/shm");
            return Files.isDirectory(devShm) ? Files.createTempDirectory(devShm, prefix) : Files.createTempDirectory(prefix);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create a directory for a shared-memory link", ex);
        }
    }

    /** Removes a link's directory and what is left in it (the rings of hosts that ended without closing). */
    public static void removeDirectory(final Path directory) {
        try (Stream<Path> files = Files.walk(directory)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (final IOException ex) {
            // best effort: a directory under /dev/shm or the temp directory
        }
    }

    /** Serves an endpoint (a switch) at {@code directory}, creating it; peers are numbered in order of first contact. */
    public ShmServer serve(final PacketEndpoint endpoint, final Path directory, final ShmOptions options) {
        return ShmServer.serve(nextPoller(), endpoint, directory, options);
    }

    /** Connects an endpoint (a worker) to the host serving {@code directory}; that host is its port 0. */
    public ShmClient connect(final PacketEndpoint endpoint, final Path directory, final ShmOptions options) {
        return ShmClient.connect(nextPoller(), endpoint, directory, options);
    }

    private synchronized Poller nextPoller() {
        final Poller poller = pollers[next];
        next = (next + 1) % pollers.length;
        return poller;
    }

    @Override
    public void close() {
        for (final Poller poller : pollers) {
            poller.stop();
        }
    }

    /** One polling thread: tasks first, then each host's ring, delayed packets and timers. */
    static final class Poller implements Runnable {
        private final List<ShmHost> hosts = new CopyOnWriteArrayList<>();
        private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
        private final IdleStrategy idle = new BackoffIdleStrategy(100, 20, 1_000, MAX_PARK_NS);
        private final Thread thread;
        private volatile boolean running = true;

        Poller(final String name) {
            thread = new Thread(this, name);
            thread.setDaemon(true);
            thread.start();
        }

        void add(final ShmHost host) {
            hosts.add(host);
            LockSupport.unpark(thread);
        }

        void remove(final ShmHost host) {
            hosts.remove(host);
        }

        void execute(final Runnable task) {
            tasks.add(task);
            LockSupport.unpark(thread);
        }

        /** Whether a task given now runs here at once (on this thread) or not at all (stopped): then run it directly. */
        boolean runsDirectly() {
            return Thread.currentThread() == thread || !thread.isAlive();
        }

        @Override
        public void run() {
            while (running) {
                int work = 0;
                Runnable task;
                while ((task = tasks.poll()) != null) {
                    task.run();
                    work++;
                }
                for (final ShmHost host : hosts) {
                    work += host.doWork();
                }
                idle.idle(work);
            }
        }

        void stop() {
            running = false;
            LockSupport.unpark(thread);
            try {
                thread.join(2_000);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
