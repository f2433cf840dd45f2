package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One sans-IO {@link PacketEndpoint} on shared memory: it reads its memory-mapped rings and writes
 * into its peers', on a {@link ShmTransport} polling thread (the single writer of the endpoint's
 * state). Packets are read in place: the endpoint parses them in the ring, with no copy between the
 * sender's buffer and its registers but the one into the ring.
 * <p>
 * Every packet travels in a one-to-one {@link SpscRing} (whose reader never writes what it read):
 * a connecting host ({@link ShmClient}, a worker) creates two, {@code peer-<id>.up} that it writes
 * and the switch reads, and {@code peer-<id>.ring} that the switch writes and it reads, then says
 * hello in the serving host's ({@link ShmServer}'s) {@code switch.ring}, a small many-to-one control
 * ring (Agrona's) every peer writes its hello and goodbye into, typed with its id. The switch maps a
 * peer's two rings when it hears its hello and numbers peers as {@link UdpHost} does (a reused index
 * gets a new generation). A full ring drops the packet and counts it, as a full socket buffer would;
 * the protocol's loss recovery resends it. The files are the user's own (directory 0700, rings 0600).
 * This class holds what both sides share: the polling, the timer, the injected faults, the counters.
 */
public abstract class ShmHost implements PacketHost {
    /** The control ring carries hellos and goodbyes only (16 bytes each). */
    static final int CONTROL_RING_BYTES = 1 << 16;
    static final int READ_LIMIT = 256;
    static final int PACKET = 2;
    /** A reference to a packet in the serving host's broadcast buffer (its position and length). */
    static final int REFERENCE = 3;

    final ShmTransport.Poller poller;
    final PacketEndpoint endpoint;
    final ShmOptions options;
    final FaultInjector faults;
    final Path directory;
    /** The switch's control ring: the one the serving host reads, and connecting hosts say hello and goodbye in. */
    final ManyToOneRingBuffer control;
    final MappedByteBuffer controlMap;
    /** The broadcast buffer's mapping (the serving host writes it, connecting hosts read it). */
    final MappedByteBuffer broadcastMap;
    final Outbox outbox = new Outbox() {
        @Override
        public void send(final int port, final ByteBuffer buffer, final int offset, final int length) {
            ShmHost.this.send(port, buffer, offset, length);
        }

        @Override
        public void multicast(final int[] ports, final int count, final ByteBuffer buffer, final int offset,
                              final int length) {
            ShmHost.this.multicast(ports, count, buffer, offset, length);
        }
    };
    final Reader reader = new Reader();
    final UnsafeBuffer sendView = new UnsafeBuffer(0, 0);
    private final ArrayDeque<Delayed> delayed = new ArrayDeque<>();
    private final AtomicLong errors = new AtomicLong();
    final AtomicLong droppedPeers = new AtomicLong();
    final AtomicLong ringFull = new AtomicLong();
    final AtomicLong badReferences = new AtomicLong();
    volatile long packetsSent;
    volatile long packetsReceived;
    private volatile long readBursts;
    private volatile Throwable lastError;
    volatile boolean closed;
    private long timerAtNs;

    ShmHost(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory, final ShmOptions options,
            final MappedByteBuffer controlMap, final MappedByteBuffer broadcastMap) {
        this.poller = poller;
        this.endpoint = endpoint;
        this.options = options;
        this.faults = options.faults();
        this.directory = directory;
        this.controlMap = controlMap;
        this.control = new ManyToOneRingBuffer(new UnsafeBuffer(controlMap));
        this.broadcastMap = broadcastMap;
    }

    void start() {
        poller.add(this);
        // the endpoint's first timer call (a worker's JOIN) on its thread
        execute(() -> { });
    }

    /** The directory this host's link lives in. */
    public Path directory() {
        return directory;
    }

    /** The directory as an address: {@code shm:<directory>}. */
    public String address() {
        return ShmTransport.SCHEME + directory;
    }

    @Override
    public String kind() {
        return "shm";
    }

    @Override
    public void execute(final Runnable task) {
        poller.execute(() -> {
            try {
                task.run();
            } catch (final RuntimeException | Error ex) {
                onError(ex);
            }
            runTimer(System.nanoTime());
        });
    }

    @Override
    public <T> CompletableFuture<T> call(final Supplier<T> function) {
        final CompletableFuture<T> future = new CompletableFuture<>();
        poller.execute(() -> {
            try {
                future.complete(function.get());
            } catch (final RuntimeException | Error ex) {
                future.completeExceptionally(ex);
            }
            runTimer(System.nanoTime());
        });
        return future;
    }

    @Override
    public long errors() {
        return errors.get();
    }

    @Override
    public Throwable lastError() {
        return lastError;
    }

    /** Packets dropped because the peer's ring was full. */
    public long ringFull() {
        return ringFull.get();
    }

    /** References to the broadcast buffer that pointed outside it (dropped). */
    public long badReferences() {
        return badReferences.get();
    }

    /** Packets from or to peers this host could not map or no longer knows. */
    public long droppedPeers() {
        return droppedPeers.get();
    }

    @Override
    public String batchingStats() {
        return String.format("shm: sent %d packets, received %d in %d bursts (%.1f/burst), %d dropped on a full ring%s",
            packetsSent, packetsReceived, readBursts, packetsReceived / Math.max(1.0, readBursts), ringFull.get(), multicastStats());
    }

    /** What the batching statistics add about multicasts (the serving host's). */
    String multicastStats() {
        return "";
    }

    /** One pass of the polling thread: packets in, held-back packets out, the timer if due. */
    int doWork() {
        if (closed) {
            return 0;
        }
        long now = System.nanoTime();
        int work = 0;
        try {
            work = readIn();
        } catch (final RuntimeException | Error ex) {
            onError(ex);
        }
        if (work > 0) {
            readBursts++;
            now = System.nanoTime();
        }
        work += sendDelayed(now);
        housekeeping(now);
        if (work > 0 || now >= timerAtNs) {
            runTimer(now);
        }
        return work;
    }

    /** Hands the packets waiting for this host to its endpoint; how many. */
    abstract int readIn();

    /** What the host does once a pass besides its packets (the serving host's heartbeat). */
    void housekeeping(final long now) {
    }

    /** Hands the packets waiting in {@code ring} (from {@code port}, its file {@code file}) to the endpoint. */
    int read(final SpscRing ring, final int port, final ByteBuffer view, final Path file) {
        if (ring.corrupt()) {
            return 0;
        }
        reader.port = port;
        reader.view = view;
        final int read = ring.read(reader, READ_LIMIT);
        if (ring.corrupt()) {
            onError(new IllegalStateException("the ring " + file + " holds a record no writer of it wrote; it is read no more"));
        }
        return read;
    }

    void runTimer(final long now) {
        try {
            timerAtNs = endpoint.onTimer(now, outbox);
        } catch (final RuntimeException | Error ex) {
            onError(ex);
            timerAtNs = PacketEndpoint.NO_DEADLINE;
        }
    }

    void onError(final Throwable ex) {
        errors.incrementAndGet();
        lastError = ex;
    }

    /** A REFERENCE record from {@code port}: true if this host takes it (a connecting host's broadcast references). */
    boolean onReference(final int port, final MutableDirectBuffer buffer, final int index, final int length) {
        return false;
    }

    /** Reads a ring's messages in place and hands each to the endpoint as a packet from {@link #port}. */
    final class Reader implements MessageHandler {
        private int port;
        private ByteBuffer view;

        @Override
        public void onMessage(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length) {
            try {
                packetsReceived++;
                if (msgTypeId == REFERENCE && onReference(port, buffer, index, length)) {
                    return;
                }
                endpoint.onPacket(port, view, index, length, System.nanoTime(), outbox);
            } catch (final RuntimeException | Error ex) {
                onError(ex);
            }
        }
    }

    /** The ring packets to {@code port} go into, or null if the number is not (or no longer) a peer's. */
    abstract SpscRing ringOf(int port);

    /** Sends a packet some other way than a ring (the serving host's bridged UDP peers); false if it is a ring's. */
    boolean sendElsewhere(final int port, final ByteBuffer buffer, final int offset, final int length) {
        return false;
    }

    void send(final int port, final ByteBuffer buffer, final int offset, final int length) {
        if (sendElsewhere(port, buffer, offset, length)) {
            return;
        }
        final SpscRing ring = ringOf(port);
        if (ring == null) {
            droppedPeers.incrementAndGet();
            return;
        }
        final int copies = faults.isActive() ? faults.copies() : 1;
        for (int c = 0; c < copies; c++) {
            if (faults.isActive() && faults.reorder()) {
                final byte[] late = new byte[length];
                buffer.get(offset, late);
                delayed.add(new Delayed(System.nanoTime() + faults.nextLong(options.reorderDelayNs()), port, late));
            } else {
                sendView.wrap(buffer, offset, length);
                write(ring, sendView, length);
            }
        }
    }

    /** A multicast: by default a copy to each port. */
    void multicast(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
        sendEach(ports, count, buffer, offset, length);
    }

    /** A copy of the packet to each port. */
    final void sendEach(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
        for (int i = 0; i < count; i++) {
            send(ports[i], buffer, offset, length);
        }
    }

    final void write(final SpscRing ring, final UnsafeBuffer bytes, final int length) {
        if (ring.write(PACKET, bytes, 0, length)) {
            packetsSent++;
        } else {
            ringFull.incrementAndGet();
        }
    }

    /** Sends the held-back packets that are due (in the order they were held; a later one may be due sooner). */
    private int sendDelayed(final long now) {
        int sent = 0;
        for (int i = delayed.size(); i > 0; i--) {
            final Delayed d = delayed.poll();
            if (d.dueNs > now) {
                delayed.add(d);
                continue;
            }
            final SpscRing ring = ringOf(d.port);
            if (ring != null) {
                write(ring, new UnsafeBuffer(d.bytes), d.bytes.length);
            }
            sent++;
        }
        return sent;
    }

    private record Delayed(long dueNs, int port, byte[] bytes) {
    }


    /** Says goodbye (a connecting host), unmaps every ring and deletes this host's own files. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final Runnable shut = () -> {
            closed = true;
            poller.remove(this);
            release();
            done.complete(null);
        };
        if (poller.runsDirectly()) {
            shut.run();
        } else {
            poller.execute(shut);
            done.completeOnTimeout(null, 2, TimeUnit.SECONDS).join();
        }
    }

    /** Unmaps and deletes what this side holds, on the polling thread, once closed. */
    abstract void release();
}
