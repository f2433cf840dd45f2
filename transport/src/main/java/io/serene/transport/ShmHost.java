package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.agrona.IoUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2IntHashMap;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.OneToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBuffer;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * One sans-IO {@link PacketEndpoint} on shared memory: it reads its own memory-mapped ring and
 * writes into its peers' rings, on a {@link ShmTransport} polling thread (the single writer of the
 * endpoint's state). Packets are read in place: the endpoint parses them in the ring, with no copy
 * between the sender's buffer and its registers but the one into the ring.
 * <p>
 * A serving host (the switch) owns {@code switch.ring}, a many-to-one ring every peer writes into,
 * each message typed with the writer's id; it maps a peer's {@code peer-<id>.ring} the first time
 * it hears from it and numbers peers as {@link UdpHost} does (a reused index gets a new
 * generation). A connecting host (a worker) owns its one-to-one ring and knows one peer, port 0.
 * A full ring drops the packet and counts it, as a full socket buffer would; the protocol's loss
 * recovery resends it. The files are the user's own (directory 0700, rings 0600).
 */
public final class ShmHost implements PacketHost {
    static final String SWITCH_RING = "switch.ring";
    /** Ids fit in a message type with one bit to spare (the goodbye bit) and stay positive. */
    private static final int MAX_ID = 1 << 29;
    /** A serving host stamps its ring this often; a ring not stamped for {@link #STALE_NS} has no server. */
    private static final long HEARTBEAT_NS = 100_000_000L;
    private static final long STALE_NS = 3_000_000_000L;
    private static final int READ_LIMIT = 256;

    private final ShmTransport.Poller poller;
    private final PacketEndpoint endpoint;
    private final ShmOptions options;
    private final FaultInjector faults;
    private final Path directory;
    private final boolean serving;
    /** This host's id in the switch's ring (a connecting host), 0 for the serving host. */
    private final int id;
    private final Path ringFile;
    private final MappedByteBuffer inboundMap;
    private final RingBuffer inbound;
    private final ByteBuffer inboundView;
    private final Outbox outbox = this::send;
    private final Reader reader = new Reader();
    private final UnsafeBuffer sendView = new UnsafeBuffer(0, 0);
    /** Peers by index, null where one said goodbye (its index waits in {@link #freeIndexes}). */
    private final List<Peer> peers = new ArrayList<>();
    private final ArrayDeque<Integer> freeIndexes = new ArrayDeque<>();
    private final PeerPorts ports = new PeerPorts();
    private final Int2IntHashMap portById = new Int2IntHashMap(-1);
    private final ArrayDeque<Delayed> delayed = new ArrayDeque<>();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong droppedPeers = new AtomicLong();
    private final AtomicLong ringFull = new AtomicLong();
    private volatile long packetsSent;
    private volatile long packetsReceived;
    private volatile long readBursts;
    private volatile Throwable lastError;
    private volatile boolean closed;
    private long timerAtNs;
    private long heartbeatAtNs;

    private ShmHost(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                    final ShmOptions options, final boolean serving, final int id, final Path ringFile,
                    final MappedByteBuffer inboundMap) {
        this.poller = poller;
        this.endpoint = endpoint;
        this.options = options;
        this.faults = options.faults();
        this.directory = directory;
        this.serving = serving;
        this.id = id;
        this.ringFile = ringFile;
        this.inboundMap = inboundMap;
        final UnsafeBuffer ring = new UnsafeBuffer(inboundMap);
        this.inbound = serving ? new ManyToOneRingBuffer(ring) : new OneToOneRingBuffer(ring);
        this.inboundView = inboundMap.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    static ShmHost serve(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                         final ShmOptions options) {
        createDirectory(directory);
        final Path file = directory.resolve(SWITCH_RING);
        if (Files.exists(file)) {
            final MappedByteBuffer old = IoUtil.mapExistingFile(file.toFile(), "switch ring");
            try {
                final long beat = new ManyToOneRingBuffer(new UnsafeBuffer(old)).consumerHeartbeatTime();
                if (System.currentTimeMillis() - beat < STALE_NS / 1_000_000) {
                    throw new IllegalStateException("another switch serves shm:" + directory + " (its ring " + file
                        + " was stamped " + (System.currentTimeMillis() - beat) + " ms ago)");
                }
            } finally {
                IoUtil.unmap(old);
            }
            IoUtil.delete(file.toFile(), false);
        }
        createFile(file);
        final MappedByteBuffer map = mapOwnFile(file, options.inboundFileBytes());
        final ShmHost host = new ShmHost(poller, endpoint, directory, options, true, 0, file, map);
        host.inbound.consumerHeartbeatTime(System.currentTimeMillis());
        host.start();
        return host;
    }

    static ShmHost connect(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                           final ShmOptions options) {
        final Path switchFile = directory.resolve(SWITCH_RING);
        if (!Files.isRegularFile(switchFile)) {
            throw new IllegalArgumentException("no switch serves shm:" + directory + " (no " + switchFile + ")");
        }
        final MappedByteBuffer switchMap = IoUtil.mapExistingFile(switchFile.toFile(), "switch ring");
        final ManyToOneRingBuffer switchRing = new ManyToOneRingBuffer(new UnsafeBuffer(switchMap));
        final long age = System.currentTimeMillis() - switchRing.consumerHeartbeatTime();
        if (age > STALE_NS / 1_000_000) {
            IoUtil.unmap(switchMap);
            throw new IllegalArgumentException("no switch serves shm:" + directory + " (its ring was last stamped "
                + age / 1000 + " s ago)");
        }
        int id;
        Path file;
        while (true) {
            id = ThreadLocalRandom.current().nextInt(1, MAX_ID);
            file = directory.resolve("peer-" + id + ".ring");
            try {
                Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
                break;
            } catch (final FileAlreadyExistsException ex) {
                // another peer's id: draw again
            } catch (final IOException ex) {
                IoUtil.unmap(switchMap);
                throw new UncheckedIOException("cannot create " + file, ex);
            }
        }
        final MappedByteBuffer map;
        try {
            map = mapOwnFile(file, options.inboundFileBytes());
        } catch (final RuntimeException ex) {
            IoUtil.unmap(switchMap);
            IoUtil.deleteIfExists(file.toFile());
            throw ex;
        }
        final ShmHost host = new ShmHost(poller, endpoint, directory, options, false, id, file, map);
        host.addPeer(-1, switchRing, switchMap);
        host.start();
        return host;
    }

    private static void createDirectory(final Path directory) {
        try {
            if (!Files.isDirectory(directory)) {
                Files.createDirectories(directory,
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create " + directory, ex);
        }
    }

    /** Sizes a file this host just created (empty, the user's own) and maps it. */
    private static MappedByteBuffer mapOwnFile(final Path file, final int bytes) {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(bytes);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot size " + file, ex);
        }
        return IoUtil.mapExistingFile(file.toFile(), "ring");
    }

    private static void createFile(final Path file) {
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create " + file, ex);
        }
    }

    private void start() {
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
            } catch (final RuntimeException ex) {
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
            } catch (final RuntimeException ex) {
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

    /** Packets from or to peers this host could not map or no longer knows. */
    public long droppedPeers() {
        return droppedPeers.get();
    }

    @Override
    public String batchingStats() {
        return String.format("shm: sent %d packets, received %d in %d bursts (%.1f/burst), %d dropped on a full ring",
            packetsSent, packetsReceived, readBursts, packetsReceived / Math.max(1.0, readBursts), ringFull.get());
    }

    /** One pass of the polling thread: packets in, held-back packets out, the timer if due. */
    int doWork() {
        if (closed) {
            return 0;
        }
        long now = System.nanoTime();
        int work = 0;
        try {
            work = inbound.read(reader, READ_LIMIT);
        } catch (final RuntimeException ex) {
            onError(ex);
        }
        if (work > 0) {
            readBursts++;
            now = System.nanoTime();
        }
        work += sendDelayed(now);
        if (serving && now >= heartbeatAtNs) {
            inbound.consumerHeartbeatTime(System.currentTimeMillis());
            heartbeatAtNs = now + HEARTBEAT_NS;
        }
        if (work > 0 || now >= timerAtNs) {
            runTimer(now);
        }
        return work;
    }

    private void runTimer(final long now) {
        try {
            timerAtNs = endpoint.onTimer(now, outbox);
        } catch (final RuntimeException ex) {
            onError(ex);
            timerAtNs = PacketEndpoint.NO_DEADLINE;
        }
    }

    private void onError(final Throwable ex) {
        errors.incrementAndGet();
        lastError = ex;
    }

    /** Reads the messages of this host's ring in place and hands each to the endpoint. */
    private final class Reader implements MessageHandler {
        @Override
        public void onMessage(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length) {
            try {
                final int port = serving ? portOf(msgTypeId) : 0;
                if (port < 0) {
                    return;
                }
                packetsReceived++;
                endpoint.onPacket(port, inboundView, index, length, System.nanoTime(), outbox);
            } catch (final RuntimeException ex) {
                onError(ex);
            }
        }
    }

    /** The port of a message's writer (mapping its ring on first contact), or -1 for a goodbye or a peer it cannot reach. */
    private int portOf(final int msgTypeId) {
        final int peerId = msgTypeId >>> 1;
        final boolean goodbye = (msgTypeId & 1) == 1;
        final int known = portById.get(peerId);
        if (goodbye) {
            if (known >= 0) {
                forget(PeerPorts.index(known));
            }
            return -1;
        }
        if (known >= 0) {
            return known;
        }
        final Path file = directory.resolve("peer-" + peerId + ".ring");
        if (peerId < 1 || peers.size() - freeIndexes.size() >= Math.min(options.maxPeers(), PeerPorts.MAX_PEERS)
            || !Files.isRegularFile(file)) {
            droppedPeers.incrementAndGet();
            return -1;
        }
        final MappedByteBuffer map;
        try {
            map = IoUtil.mapExistingFile(file.toFile(), "peer ring");
        } catch (final RuntimeException ex) {
            droppedPeers.incrementAndGet();
            return -1;
        }
        return addPeer(peerId, new OneToOneRingBuffer(new UnsafeBuffer(map)), map);
    }

    private int addPeer(final int peerId, final RingBuffer ring, final MappedByteBuffer map) {
        final Peer peer = new Peer(peerId, ring, map);
        final int port;
        if (freeIndexes.isEmpty()) {
            port = ports.port(peers.size());
            peers.add(peer);
        } else {
            final int index = freeIndexes.poll();
            port = ports.reuse(index);
            peers.set(index, peer);
        }
        if (peerId > 0) {
            portById.put(peerId, port);
        }
        return port;
    }

    private void forget(final int index) {
        final Peer peer = peers.set(index, null);
        portById.remove(peer.id());
        IoUtil.unmap(peer.map());
        freeIndexes.add(index);
    }

    /** The ring of the peer {@code port} names, or null if the number is not (or no longer) a peer's. */
    private RingBuffer ringOf(final int port) {
        final Peer peer = ports.current(port, peers.size()) ? peers.get(PeerPorts.index(port)) : null;
        return peer == null ? null : peer.ring();
    }

    private void send(final int port, final ByteBuffer buffer, final int offset, final int length) {
        final RingBuffer ring = ringOf(port);
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

    private void write(final RingBuffer ring, final UnsafeBuffer bytes, final int length) {
        // a connecting host types its messages with its id (the switch's ring is shared); the switch with 2
        if (ring.write(serving ? 2 : id << 1, bytes, 0, length)) {
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
            final RingBuffer ring = ringOf(d.port);
            if (ring != null) {
                write(ring, new UnsafeBuffer(d.bytes), d.bytes.length);
            }
            sent++;
        }
        return sent;
    }

    private record Delayed(long dueNs, int port, byte[] bytes) {
    }

    /** A peer's id in the switch's ring (-1: the switch, for a connecting host), its ring and the mapping behind it. */
    private record Peer(int id, RingBuffer ring, MappedByteBuffer map) {
    }

    /** Says goodbye (a connecting host), unmaps every ring and deletes this host's own file. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final Runnable shut = () -> {
            closed = true;
            poller.remove(this);
            if (!serving) {
                peers.get(0).ring().write((id << 1) | 1, new UnsafeBuffer(new byte[1]), 0, 1);
            }
            for (final Peer peer : peers) {
                if (peer != null) {
                    IoUtil.unmap(peer.map());
                }
            }
            IoUtil.unmap(inboundMap);
            IoUtil.deleteIfExists(ringFile.toFile());
            done.complete(null);
        };
        if (poller.runsDirectly()) {
            shut.run();
        } else {
            poller.execute(shut);
            done.completeOnTimeout(null, 2, TimeUnit.SECONDS).join();
        }
    }
}
