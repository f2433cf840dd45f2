package io.serene.worker.agent;

import io.serene.worker.Aggregate;
import io.serene.worker.WorkerEngine;
import io.serene.worker.WorkerHost;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * A worker agent: joins a job on behalf of one local client (a Python process, say) and runs the
 * Java worker engine for it. The client speaks {@link AgentFrames} on a Unix socket and hands
 * gradients over, and takes averages back, through a shared file of {@code elements} float32.
 * One client per agent: a second connection is told so and closed. The agent ends when its client
 * says BYE or goes away; then it leaves the job and removes its socket and file.
 */
public final class AgentServer implements AutoCloseable {
    private final Path socketPath;
    private final Path lockPath;
    private final FileChannel lock;
    private final int rank;
    private final int world;
    private final int timeoutSeconds;
    private final ServerSocketChannel server;
    /** Joins the job for a client's elements per round; throws with a message for the client when that fails. */
    private final IntFunction<WorkerHost> join;
    private final AgentFrames.Out out = new AgentFrames.Out(AgentFrames.RESULT);
    private final AgentFrames.Reader in = new AgentFrames.Reader();
    private Path sharedPath;
    private FloatBuffer shared;
    private float[] gradient;
    private float[] average;
    private WorkerHost worker;
    private int nextRound;
    private volatile SocketChannel client;

    private AgentServer(final Path socketPath, final Path lockPath, final FileChannel lock, final int rank, final int world,
                        final int timeoutSeconds, final ServerSocketChannel server,
                        final IntFunction<WorkerHost> join) {
        this.socketPath = socketPath;
        this.lockPath = lockPath;
        this.lock = lock;
        this.rank = rank;
        this.world = world;
        this.timeoutSeconds = timeoutSeconds;
        this.server = server;
        this.join = join;
    }

    /**
     * Listens at {@code socketPath} for the client of worker {@code rank} of {@code world}. A socket
     * file left by an agent that is gone is replaced; one that a live agent holds (its lock file
     * beside it) is an error.
     */
    public static AgentServer listen(final Path socketPath, final int rank, final int world, final int timeoutSeconds,
                                     final IntFunction<WorkerHost> join) throws IOException {
        // an agent holds its socket's lock for its life: a socket file without a holder is one left by an agent that died
        final Path lockPath = socketPath.resolveSibling(socketPath.getFileName() + ".lock");
        final FileChannel lock = FileChannel.open(lockPath, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        if (!locked(lock)) {
            lock.close();
            throw new IllegalStateException("an agent already listens at " + socketPath + " (rank " + rank + " has one)");
        }
        Files.deleteIfExists(socketPath);
        final ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(socketPath));
        return new AgentServer(socketPath, lockPath, lock, rank, world, timeoutSeconds, server, join);
    }

    /** Whether this process took the lock; false where another holds it (another process, or another agent in this one). */
    private static boolean locked(final FileChannel lock) throws IOException {
        try {
            return lock.tryLock() != null;
        } catch (final OverlappingFileLockException held) {
            return false;
        }
    }

    /**
     * Serves the first client to connect within {@code waitSeconds} until it leaves; later ones are
     * refused. Returns how it ended, in words ("client said bye", "client went away"), with the
     * engine's counters once it joined.
     */
    public String serve(final int waitSeconds) throws IOException, InterruptedException {
        final Thread acceptor = new Thread(this::accept, "agent-accept");
        acceptor.setDaemon(true);
        acceptor.start();
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(waitSeconds);
        synchronized (this) {
            while (client == null) {
                final long left = deadline - System.nanoTime();
                if (left <= 0) {
                    throw new IllegalStateException("no client connected to " + socketPath + " within " + waitSeconds + " s");
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
        final String ended = session(client);
        final String counters = worker == null ? null : engine(e -> e.counters().toString());
        return counters == null ? ended : ended + "; counters " + counters;
    }

    /** What the worker engine says of itself, asked on its thread for at most 2 s; null if it does not answer. */
    private String engine(final Function<WorkerEngine, String> what) throws InterruptedException {
        try {
            return worker.call(what).get(2, TimeUnit.SECONDS);
        } catch (final ExecutionException | TimeoutException unknown) {
            return null;
        }
    }

    private void accept() {
        try {
            while (server.isOpen()) {
                final SocketChannel ch = server.accept();
                synchronized (this) {
                    if (client == null) {
                        client = ch;
                        notifyAll();
                        continue;
                    }
                }
                try (ch) {
                    new AgentFrames.Out(AgentFrames.ERROR).string("this agent (" + socketPath + ") serves rank " + rank
                        + "'s client already: a rank joins once").send(ch);
                }
            }
        } catch (final IOException closed) {
            // the server socket closed: the agent is ending
        }
    }

    private String session(final SocketChannel ch) throws IOException, InterruptedException {
        try {
            AgentFrames.Frame f = in.read(ch);
            if (f == null) {
                return "client went away before its HELLO";
            }
            if (!hello(ch, f)) {
                return "refused the client's HELLO";
            }
            while ((f = in.read(ch)) != null) {
                switch (f.type()) {
                    case AgentFrames.ALLREDUCE -> allreduce(ch, f.i32(), f.i32(), 1_000L * f.i32());
                    case AgentFrames.CLEARANCE -> clearance(ch, f.i32());
                    case AgentFrames.CONFIG -> out.reset(AgentFrames.CONFIG_IS).string(configFor(nextRound)).send(ch);
                    case AgentFrames.RELEASED -> out.reset(AgentFrames.RELEASED_IS)
                        .i32(await(worker.call(e -> e.releasedRound()), "the released round")).send(ch);
                    case AgentFrames.BYE -> {
                        return "client said bye";
                    }
                    default -> {
                        return refuse(ch, "unknown request type " + f.type());
                    }
                }
            }
            return "client went away";
        } catch (final RefusedException ex) {
            return refuse(ch, ex.getMessage());
        }
    }

    private boolean hello(final SocketChannel ch, final AgentFrames.Frame f) throws IOException, InterruptedException {
        if (f.type() != AgentFrames.HELLO || f.body().remaining() < 18 || f.i32() != AgentFrames.MAGIC) {
            refuse(ch, "the first request must be a Serene HELLO");
            return false;
        }
        final int version = f.u16();
        final int r = f.i32();
        final int w = f.i32();
        final int elements = f.i32();
        if (version != AgentFrames.VERSION) {
            refuse(ch, "protocol version " + version + " (this agent speaks " + AgentFrames.VERSION + ")");
            return false;
        }
        if (r != rank || w != world) {
            refuse(ch, "the client is rank " + r + " of " + w + ", this agent serves rank " + rank + " of " + world);
            return false;
        }
        if (elements < 1) {
            refuse(ch, "a round must carry at least one element, the client asked for " + elements);
            return false;
        }
        try {
            worker = join.apply(elements);
        } catch (final RuntimeException ex) {
            refuse(ch, ex.getMessage());
            return false;
        }
        sharedPath = sharedFile(socketPath);
        try (FileChannel fc = FileChannel.open(sharedPath, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE,
            StandardOpenOption.TRUNCATE_EXISTING)) {
            final MappedByteBuffer map = fc.map(FileChannel.MapMode.READ_WRITE, 0, 4L * elements);
            shared = map.order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        }
        gradient = new float[elements];
        average = new float[elements];
        out.reset(AgentFrames.WELCOME).u16(AgentFrames.VERSION).i32(elements).string(sharedPath.toString()).string(configFor(0)).send(ch);
        return true;
    }

    private void allreduce(final SocketChannel ch, final int round, final int used, final long computeNs)
        throws IOException, InterruptedException {
        if (round != nextRound) {
            throw new RefusedException("round " + round + " out of order: rounds go 0, 1, 2, ... and the next is " + nextRound);
        }
        if (used < 1 || used > gradient.length) {
            throw new RefusedException("round " + round + " carries " + used + " elements; the job's rounds carry 1.." + gradient.length);
        }
        shared.get(0, gradient, 0, used);
        Arrays.fill(gradient, used, gradient.length, 0f);
        // a round released without this rank before it handed its gradient in is skipped, as Serene's training loop skips it:
        // the switch hears the rank (its compute time), the gradient is dropped (not folded on and on by a rank that stays late)
        final boolean skipped = await(worker.call(e -> e.releasedRound() >= round), "the released round");
        final Aggregate a = await(skipped ? worker.skip(round, computeNs) : worker.allreduce(round, gradient, computeNs),
            "round " + round + "'s aggregate");
        nextRound++;
        try {
            a.averageInto(average);
            shared.put(0, average, 0, used);
            out.reset(AgentFrames.RESULT).i32(round).i32(a.contributorCount()).i32(skipped ? 1 : 0).send(ch);
        } finally {
            a.release();
        }
    }

    private void clearance(final SocketChannel ch, final int round) throws IOException, InterruptedException {
        await(worker.awaitClearance(round), "clearance for round " + round);
        final int bound = await(worker.call(e -> e.boundFor(round)), "the bound of round " + round);
        out.reset(AgentFrames.CLEARED).i32(round).i32(bound).send(ch);
    }

    private String configFor(final int round) throws InterruptedException {
        return await(worker.call(e -> e.configFor(round)), "the config table");
    }

    private <T> T await(final CompletableFuture<T> f, final String what) throws InterruptedException {
        try {
            return f.get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            final String state = Objects.requireNonNullElse(engine(e -> e.debugState() + "; " + e.counters()), "unknown");
            throw new RefusedException("no " + what + " within " + timeoutSeconds + " s (is the switch running, every rank's client alive?); "
                + "this worker: " + state);
        } catch (final ExecutionException ex) {
            throw new RefusedException(what + " failed: " + ex.getCause().getMessage());
        }
    }

    private String refuse(final SocketChannel ch, final String why) throws IOException {
        out.reset(AgentFrames.ERROR).string(why).send(ch);
        return "refused: " + why;
    }

    /** The shared file beside an agent's socket: in /dev/shm where there is one, else the socket's directory. */
    static Path sharedFile(final Path socket) {
        final Path shm = Path.of("/dev/shm");
        final String name = socket.getFileName() + ".buf";
        return Files.isDirectory(shm) && Files.isWritable(shm) ? shm.resolve(name) : socket.resolveSibling(name);
    }

    /** Leaves the job and removes the socket and the shared file. */
    @Override
    public void close() throws IOException {
        server.close();
        if (client != null) {
            client.close();
        }
        if (worker != null) {
            worker.close();
        }
        Files.deleteIfExists(socketPath);
        Files.deleteIfExists(lockPath);
        lock.close();
        if (sharedPath != null) {
            Files.deleteIfExists(sharedPath);
        }
    }

    /** A request the agent cannot carry out; the client is told why and the session ends. */
    private static final class RefusedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RefusedException(final String message) {
            super(message);
        }
    }
}
