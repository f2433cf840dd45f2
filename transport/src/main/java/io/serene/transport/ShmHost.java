package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.agrona.IoUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2IntHashMap;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.ManyToOneRingBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
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
 * a connecting host (a worker) creates two, {@code peer-<id>.up} that it writes and the switch
 * reads, and {@code peer-<id>.ring} that the switch writes and it reads, then says hello in the
 * serving host's {@code switch.ring}, a small many-to-one control ring (Agrona's) every peer
 * writes its hello and goodbye into, typed with its id. The switch maps a peer's two rings when it
 * hears its hello and numbers peers as {@link UdpHost} does (a reused index gets a new
 * generation). A full ring drops the packet and counts it, as a full socket buffer would; the
 * protocol's loss recovery resends it. The files are the user's own (directory 0700, rings 0600).
 */
public final class ShmHost implements PacketHost {
    /** The control ring carries hellos and goodbyes only (16 bytes each). */
    static final int CONTROL_RING_BYTES = 1 << 16;
    private static final int READ_LIMIT = 256;
    private static final int PACKET = 2;
    /** A reference to a packet in the serving host's broadcast buffer (its position and length). */
    private static final int REFERENCE = 3;

    private final ShmTransport.Poller poller;
    private final PacketEndpoint endpoint;
    private final ShmOptions options;
    private final FaultInjector faults;
    private final Path directory;
    private final boolean serving;
    /** This host's id in the switch's control ring (a connecting host), 0 for the serving host. */
    private final int id;
    /** The switch's control ring: the one this host reads (serving) or says hello and goodbye in (connecting). */
    private final ManyToOneRingBuffer control;
    private final MappedByteBuffer controlMap;
    /** A connecting host's rings: the switch's packets to it and its own to the switch; null for the serving host. */
    private final ShmPeer own;
    /** The serving host's multicast packets, written once for every recipient; null for a connecting host. */
    private final BroadcastBuffer broadcast;
    /** The broadcast buffer's mapping (the serving host writes it, connecting hosts read it). */
    private final MappedByteBuffer broadcastMap;
    /** The broadcast buffer as a connecting host parses packets in it. */
    private final ByteBuffer broadcastView;
    private final UnsafeBuffer reference = new UnsafeBuffer(new byte[BroadcastBuffer.REFERENCE_LENGTH]);
    /** A serving host's peers' pins in the broadcast buffer, by peer index. */
    private BroadcastBuffer.Pins[] pins = new BroadcastBuffer.Pins[16];
    private final Outbox outbox = new Outbox() {
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
    private final Reader reader = new Reader();
    private final BridgeReader bridgeReader = new BridgeReader();
    /** A serving host's UDP peers ({@link UdpBridge}): their packets in, the host's to them out; null without. */
    private SpscRing bridgeIn;
    private ByteBuffer bridgeInView;
    private SpscRing bridgeOut;
    private Runnable bridgeWake;
    private final AtomicLong bridgeDrops = new AtomicLong();
    private final ControlReader controlReader = new ControlReader();
    private final UnsafeBuffer sendView = new UnsafeBuffer(0, 0);
    /** A serving host's peers by index, null where one said goodbye (its index waits in {@link #freeIndexes}). */
    private final List<ShmPeer> peers = new ArrayList<>();
    private final ArrayDeque<Integer> freeIndexes = new ArrayDeque<>();
    private final PeerPorts ports = new PeerPorts();
    private final Int2IntHashMap portById = new Int2IntHashMap(-1);
    private final ArrayDeque<Delayed> delayed = new ArrayDeque<>();
    private final AtomicLong errors = new AtomicLong();
    private final AtomicLong droppedPeers = new AtomicLong();
    private final AtomicLong ringFull = new AtomicLong();
    private final AtomicLong badReferences = new AtomicLong();
    private volatile long broadcasts;
    private volatile long broadcastFallbacks;
    private volatile long packetsSent;
    private volatile long packetsReceived;
    private volatile long readBursts;
    private volatile Throwable lastError;
    private volatile boolean closed;
    private long timerAtNs;
    private long heartbeatAtNs;

    private ShmHost(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                    final ShmOptions options, final boolean serving, final int id, final MappedByteBuffer controlMap,
                    final ShmPeer own, final MappedByteBuffer broadcastMap) {
        this.poller = poller;
        this.endpoint = endpoint;
        this.options = options;
        this.faults = options.faults();
        this.directory = directory;
        this.serving = serving;
        this.id = id;
        this.controlMap = controlMap;
        this.control = new ManyToOneRingBuffer(new UnsafeBuffer(controlMap));
        this.own = own;
        this.broadcastMap = broadcastMap;
        this.broadcast = serving ? new BroadcastBuffer(new UnsafeBuffer(broadcastMap)) : null;
        this.broadcastView = broadcastMap.duplicate().order(ByteOrder.LITTLE_ENDIAN);
    }

    static ShmHost serve(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                         final ShmOptions options) {
        ShmFiles.createDirectory(directory);
        ShmFiles.removeStaleSwitch(directory);
        final Path broadcastFile = directory.resolve(ShmFiles.BROADCAST);
        IoUtil.deleteIfExists(broadcastFile.toFile());
        ShmFiles.createFile(broadcastFile);
        final MappedByteBuffer broadcastMap = ShmFiles.mapOwnFile(broadcastFile, options.inboundRingBytes());
        // the control ring last: a peer that finds it stamped finds the broadcast buffer too
        final Path file = directory.resolve(ShmFiles.SWITCH_RING);
        ShmFiles.createFile(file);
        final MappedByteBuffer map = ShmFiles.mapOwnFile(file, CONTROL_RING_BYTES + RingBufferDescriptor.TRAILER_LENGTH);
        final ShmHost host = new ShmHost(poller, endpoint, directory, options, true, 0, map, null, broadcastMap);
        host.control.consumerHeartbeatTime(System.currentTimeMillis());
        host.start();
        return host;
    }

    static ShmHost connect(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
                           final ShmOptions options) {
        final MappedByteBuffer switchMap = ShmFiles.mapLiveSwitchRing(directory);
        MappedByteBuffer broadcastMap = null;
        final int id;
        try {
            broadcastMap = ShmFiles.mapBroadcast(directory);
            id = ShmFiles.claimPeerId(directory);
        } catch (final RuntimeException ex) {
            IoUtil.unmap(switchMap);
            if (broadcastMap != null) {
                IoUtil.unmap(broadcastMap);
            }
            throw ex;
        }
        final Path down = ShmFiles.downFile(directory, id);
        final Path up = ShmFiles.upFile(directory, id);
        MappedByteBuffer downMap = null;
        final MappedByteBuffer upMap;
        try {
            downMap = ShmFiles.mapOwnFile(down, options.inboundFileBytes());
            ShmFiles.createFile(up);
            upMap = ShmFiles.mapOwnFile(up, options.inboundFileBytes());
        } catch (final RuntimeException ex) {
            IoUtil.unmap(switchMap);
            IoUtil.unmap(broadcastMap);
            if (downMap != null) {
                IoUtil.unmap(downMap);
            }
            IoUtil.deleteIfExists(down.toFile());
            IoUtil.deleteIfExists(up.toFile());
            throw ex;
        }
        final ShmPeer own = new ShmPeer(id, 0, down, up, downMap, upMap);
        final ShmHost host = new ShmHost(poller, endpoint, directory, options, false, id, switchMap, own, broadcastMap);
        if (!host.control.write(id << 1, new UnsafeBuffer(new byte[1]), 0, 1)) {
            own.unmap();
            IoUtil.unmap(switchMap);
            IoUtil.unmap(broadcastMap);
            own.delete();
            throw new IllegalStateException("the switch at shm:" + directory + " takes no hellos (its control ring "
                + directory.resolve(ShmFiles.SWITCH_RING) + " is full)");
        }
        host.start();
        return host;
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

    /** Multicasts written once into the broadcast buffer (a serving host). */
    public long broadcasts() {
        return broadcasts;
    }

    /** Multicasts sent as a copy per recipient because the broadcast buffer had no room (a serving host). */
    public long broadcastFallbacks() {
        return broadcastFallbacks;
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
        final String multicasts = serving ? String.format(", %d multicasts written once (%d as copies)", broadcasts,
            broadcastFallbacks) : "";
        return String.format("shm: sent %d packets, received %d in %d bursts (%.1f/burst), %d dropped on a full ring%s",
            packetsSent, packetsReceived, readBursts, packetsReceived / Math.max(1.0, readBursts), ringFull.get(), multicasts);
    }

    /** One pass of the polling thread: packets in, held-back packets out, the timer if due. */
    int doWork() {
        if (closed) {
            return 0;
        }
        long now = System.nanoTime();
        int work = 0;
        try {
            if (serving) {
                control.read(controlReader, READ_LIMIT);
                for (int i = 0; i < peers.size(); i++) {
                    final ShmPeer peer = peers.get(i);
                    if (peer != null) {
                        work += readPeer(peer);
                    }
                }
                if (bridgeIn != null) {
                    work += bridgeIn.read(bridgeReader, READ_LIMIT);
                }
            } else {
                work = readPeer(own);
            }
        } catch (final RuntimeException | Error ex) {
            onError(ex);
        }
        if (work > 0) {
            readBursts++;
            now = System.nanoTime();
        }
        work += sendDelayed(now);
        if (serving && now >= heartbeatAtNs) {
            control.consumerHeartbeatTime(System.currentTimeMillis());
            heartbeatAtNs = now + ShmFiles.HEARTBEAT_NS;
        }
        if (work > 0 || now >= timerAtNs) {
            runTimer(now);
        }
        return work;
    }

    /** Hands the packets waiting in the ring a peer's packets come in (a worker: its own down ring) to the endpoint. */
    private int readPeer(final ShmPeer peer) {
        final SpscRing ring = serving ? peer.up() : peer.down();
        if (ring.corrupt()) {
            return 0;
        }
        reader.port = peer.port();
        reader.view = serving ? peer.upView() : peer.downView();
        final int read = ring.read(reader, READ_LIMIT);
        if (ring.corrupt()) {
            onError(new IllegalStateException("the ring " + (serving ? peer.upFile() : peer.downFile())
                + " holds a record no writer of it wrote; it is read no more"));
        }
        return read;
    }

    private void runTimer(final long now) {
        try {
            timerAtNs = endpoint.onTimer(now, outbox);
        } catch (final RuntimeException | Error ex) {
            onError(ex);
            timerAtNs = PacketEndpoint.NO_DEADLINE;
        }
    }

    private void onError(final Throwable ex) {
        errors.incrementAndGet();
        lastError = ex;
    }

    /** Reads a ring's messages in place and hands each to the endpoint as a packet from {@link #port}. */
    private final class Reader implements MessageHandler {
        private int port;
        private ByteBuffer view;

        @Override
        public void onMessage(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length) {
            try {
                packetsReceived++;
                if (msgTypeId == REFERENCE && !serving) {
                    final int packetLength = length == BroadcastBuffer.REFERENCE_LENGTH ? buffer.getInt(index + 8) : -1;
                    final int at = BroadcastBuffer.indexOf(buffer.getLong(index), packetLength, broadcastView.capacity());
                    if (packetLength < 0 || at < 0) {
                        badReferences.incrementAndGet();
                        return;
                    }
                    endpoint.onPacket(port, broadcastView, at, packetLength, System.nanoTime(), outbox);
                    return;
                }
                endpoint.onPacket(port, view, index, length, System.nanoTime(), outbox);
            } catch (final RuntimeException | Error ex) {
                onError(ex);
            }
        }
    }

    /** Hands the bridged link's packets to the endpoint, each from its UDP peer's port with the link bit set. */
    private final class BridgeReader implements MessageHandler {
        @Override
        public void onMessage(final int port, final MutableDirectBuffer buffer, final int index, final int length) {
            try {
                packetsReceived++;
                endpoint.onPacket(port | PeerPorts.LINK_BIT, bridgeInView, index, length, System.nanoTime(), outbox);
            } catch (final RuntimeException | Error ex) {
                onError(ex);
            }
        }
    }

    /** A serving host takes a bridged link's rings (see {@link UdpBridge}); on its thread, before the link's first packet. */
    void attach(final SpscRing in, final ByteBuffer inView, final SpscRing out, final Runnable wake) {
        if (!serving) {
            throw new IllegalStateException("only the switch's host takes a bridged link");
        }
        final Runnable set = () -> {
            bridgeIn = in;
            bridgeInView = inView;
            bridgeOut = out;
            bridgeWake = wake;
        };
        onThread(set);
    }

    /** Runs a change of the host's state on its thread (at once if this is it, or it has ended). */
    private void onThread(final Runnable change) {
        if (poller.runsDirectly()) {
            change.run();
        } else {
            call(() -> {
                change.run();
                return null;
            }).join();
        }
    }

    /** Forgets the bridged link (its peers' packets are dropped and counted from now on). */
    void detach() {
        if (!closed) {
            onThread(() -> {
                bridgeIn = null;
                bridgeOut = null;
            });
        }
    }

    /** Packets to the bridged link dropped on its full ring, or after it was detached. */
    long bridgeDrops() {
        return bridgeDrops.get();
    }

    /** Reads the serving host's control ring: each peer's hello (its rings mapped) and goodbye (forgotten). */
    private final class ControlReader implements MessageHandler {
        @Override
        public void onMessage(final int msgTypeId, final MutableDirectBuffer buffer, final int index, final int length) {
            final int peerId = msgTypeId >>> 1;
            final int known = portById.get(peerId);
            if ((msgTypeId & 1) == 1) {
                if (known >= 0) {
                    forget(PeerPorts.index(known));
                }
            } else if (known < 0) {
                hello(peerId);
            }
        }
    }

    /** Maps a peer's two rings when it says hello (it created them before), or counts it dropped. */
    private void hello(final int peerId) {
        final ShmPeer mapped = peerId < 1 || peers.size() - freeIndexes.size() >= Math.min(options.maxPeers(), PeerPorts.MAX_PEERS)
            ? null : ShmPeer.mapExisting(directory, peerId);
        if (mapped == null) {
            droppedPeers.incrementAndGet();
            return;
        }
        final int port;
        final int index;
        if (freeIndexes.isEmpty()) {
            index = peers.size();
            port = ports.port(index);
            peers.add(null);
        } else {
            index = freeIndexes.poll();
            port = ports.reuse(index);
        }
        peers.set(index, mapped.withPort(port));
        if (index >= pins.length) {
            pins = Arrays.copyOf(pins, Math.max(index + 1, pins.length * 2));
        }
        pins[index] = new BroadcastBuffer.Pins(mapped.down());
        portById.put(peerId, port);
    }

    private void forget(final int index) {
        final ShmPeer peer = peers.set(index, null);
        pins[index] = null;
        portById.remove(peer.id());
        peer.unmap();
        freeIndexes.add(index);
    }

    /** The ring packets to {@code port} go into, or null if the number is not (or no longer) a peer's. */
    private SpscRing ringOf(final int port) {
        if (!serving) {
            return port == 0 ? own.up() : null;
        }
        final ShmPeer peer = peerOf(port);
        return peer == null ? null : peer.down();
    }

    /** A serving host's peer known as {@code port}, or null if the number is not (or no longer) a peer's. */
    private ShmPeer peerOf(final int port) {
        return ports.current(port, peers.size()) ? peers.get(PeerPorts.index(port)) : null;
    }

    private void send(final int port, final ByteBuffer buffer, final int offset, final int length) {
        if ((port & PeerPorts.LINK_BIT) != 0 && serving) {
            // a UDP peer's: to the bridge's thread (its own injector applies its faults)
            sendView.wrap(buffer, offset, length);
            if (bridgeOut != null && bridgeOut.write(port & ~PeerPorts.LINK_BIT, sendView, 0, length)) {
                packetsSent++;
                bridgeWake.run();
            } else {
                bridgeDrops.incrementAndGet();
            }
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

    /**
     * A multicast: written once into the broadcast buffer, and a reference to it into each
     * recipient's ring; with faults to inject, or no room in the buffer, a copy per recipient.
     */
    private void multicast(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
        if (!serving || count < 2 || faults.isActive()) {
            sendEach(ports, count, buffer, offset, length);
            return;
        }
        sendView.wrap(buffer, offset, length);
        final long position = broadcast.write(sendView, 0, length, pins, peers.size());
        if (position < 0) {
            broadcastFallbacks++;
            sendEach(ports, count, buffer, offset, length);
            return;
        }
        broadcasts++;
        reference.putLong(0, position);
        reference.putInt(8, length);
        for (int i = 0; i < count; i++) {
            final int port = ports[i];
            if ((port & PeerPorts.LINK_BIT) != 0) {
                send(port, buffer, offset, length);
                continue;
            }
            final ShmPeer peer = peerOf(port);
            if (peer == null) {
                droppedPeers.incrementAndGet();
                continue;
            }
            final BroadcastBuffer.Pins peerPins = pins[PeerPorts.index(port)];
            if (peerPins.full()) {
                sendView.wrap(buffer, offset, length);
                write(peer.down(), sendView, length);
                continue;
            }
            if (peer.down().write(REFERENCE, reference, 0, BroadcastBuffer.REFERENCE_LENGTH)) {
                peerPins.add(position);
                packetsSent++;
            } else {
                ringFull.incrementAndGet();
            }
        }
    }

    /** A copy of the packet to each port. */
    private void sendEach(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
        for (int i = 0; i < count; i++) {
            send(ports[i], buffer, offset, length);
        }
    }

    private void write(final SpscRing ring, final UnsafeBuffer bytes, final int length) {
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
            if (serving) {
                for (final ShmPeer peer : peers) {
                    if (peer != null) {
                        peer.unmap();
                    }
                }
                IoUtil.unmap(controlMap);
                IoUtil.deleteIfExists(directory.resolve(ShmFiles.SWITCH_RING).toFile());
                IoUtil.unmap(broadcastMap);
                IoUtil.deleteIfExists(directory.resolve(ShmFiles.BROADCAST).toFile());
            } else {
                control.write((id << 1) | 1, new UnsafeBuffer(new byte[1]), 0, 1);
                IoUtil.unmap(controlMap);
                IoUtil.unmap(broadcastMap);
                own.unmap();
                own.delete();
            }
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
