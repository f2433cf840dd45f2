package io.serene.transport;

import io.serene.protocol.PacketEndpoint;
import org.agrona.IoUtil;
import org.agrona.MutableDirectBuffer;
import org.agrona.collections.Int2IntHashMap;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;
import org.agrona.concurrent.ringbuffer.RingBufferDescriptor;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The serving side of a shared-memory link (the switch): it reads the control ring for its peers'
 * hellos and goodbyes, each peer's up ring, and a bridged UDP link's ring if it has one
 * ({@link UdpBridge}); it writes each peer's down ring, and a multicast once into its broadcast
 * buffer with a reference to it in each recipient's ring.
 */
public final class ShmServer extends ShmHost {
    private final BroadcastBuffer broadcast;
    private final UnsafeBuffer reference = new UnsafeBuffer(new byte[BroadcastBuffer.REFERENCE_LENGTH]);
    /** The peers' pins in the broadcast buffer, by peer index. */
    private BroadcastBuffer.Pins[] pins = new BroadcastBuffer.Pins[16];
    private final ControlReader controlReader = new ControlReader();
    private final BridgeReader bridgeReader = new BridgeReader();
    /** The bridged UDP peers ({@link UdpBridge}): their packets in, the host's to them out; null without. */
    private SpscRing bridgeIn;
    private ByteBuffer bridgeInView;
    private SpscRing bridgeOut;
    private Runnable bridgeWake;
    private final AtomicLong bridgeDrops = new AtomicLong();
    /** The peers by index, null where one said goodbye (its index waits in {@link #freeIndexes}). */
    private final List<ShmPeer> peers = new ArrayList<>();
    private final ArrayDeque<Integer> freeIndexes = new ArrayDeque<>();
    private final PeerPorts ports = new PeerPorts();
    private final Int2IntHashMap portById = new Int2IntHashMap(-1);
    private volatile long broadcasts;
    private volatile long broadcastFallbacks;
    private long heartbeatAtNs;

    private ShmServer(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory, final ShmOptions options,
                      final MappedByteBuffer controlMap, final MappedByteBuffer broadcastMap) {
        super(poller, endpoint, directory, options, controlMap, broadcastMap);
        this.broadcast = new BroadcastBuffer(new UnsafeBuffer(broadcastMap));
    }

    static ShmServer serve(final ShmTransport.Poller poller, final PacketEndpoint endpoint, final Path directory,
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
        final ShmServer host = new ShmServer(poller, endpoint, directory, options, map, broadcastMap);
        host.control.consumerHeartbeatTime(System.currentTimeMillis());
        host.start();
        return host;
    }

    /** Multicasts written once into the broadcast buffer. */
    public long broadcasts() {
        return broadcasts;
    }

    /** Multicasts sent as a copy per recipient because the broadcast buffer had no room. */
    public long broadcastFallbacks() {
        return broadcastFallbacks;
    }

    @Override
    String multicastStats() {
        return String.format(", %d multicasts written once (%d as copies)", broadcasts, broadcastFallbacks);
    }

    @Override
    int readIn() {
        control.read(controlReader, READ_LIMIT);
        int work = 0;
        for (int i = 0; i < peers.size(); i++) {
            final ShmPeer peer = peers.get(i);
            if (peer != null) {
                work += read(peer.up(), peer.port(), peer.upView(), peer.upFile());
            }
        }
        if (bridgeIn != null) {
            work += bridgeIn.read(bridgeReader, READ_LIMIT);
        }
        return work;
    }

    @Override
    void housekeeping(final long now) {
        if (now >= heartbeatAtNs) {
            control.consumerHeartbeatTime(System.currentTimeMillis());
            heartbeatAtNs = now + ShmFiles.HEARTBEAT_NS;
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

    /** Takes a bridged link's rings (see {@link UdpBridge}); on its thread, before the link's first packet. */
    void attach(final SpscRing in, final ByteBuffer inView, final SpscRing out, final Runnable wake) {
        onThread(() -> {
            bridgeIn = in;
            bridgeInView = inView;
            bridgeOut = out;
            bridgeWake = wake;
        });
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

    /** Reads the control ring: each peer's hello (its rings mapped) and goodbye (forgotten). */
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

    @Override
    SpscRing ringOf(final int port) {
        final ShmPeer peer = peerOf(port);
        return peer == null ? null : peer.down();
    }

    /** The peer known as {@code port}, or null if the number is not (or no longer) a peer's. */
    private ShmPeer peerOf(final int port) {
        return ports.current(port, peers.size()) ? peers.get(PeerPorts.index(port)) : null;
    }

    @Override
    boolean sendElsewhere(final int port, final ByteBuffer buffer, final int offset, final int length) {
        if ((port & PeerPorts.LINK_BIT) == 0) {
            return false;
        }
        // a UDP peer's: to the bridge's thread (its own injector applies its faults)
        sendView.wrap(buffer, offset, length);
        if (bridgeOut != null && bridgeOut.write(port & ~PeerPorts.LINK_BIT, sendView, 0, length)) {
            packetsSent++;
            bridgeWake.run();
        } else {
            bridgeDrops.incrementAndGet();
        }
        return true;
    }

    /**
     * A multicast: written once into the broadcast buffer, and a reference to it into each
     * recipient's ring; with faults to inject, or no room in the buffer, a copy per recipient.
     */
    @Override
    void multicast(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
        if (count < 2 || faults.isActive()) {
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

    @Override
    void release() {
        for (final ShmPeer peer : peers) {
            if (peer != null) {
                peer.unmap();
            }
        }
        IoUtil.unmap(controlMap);
        IoUtil.deleteIfExists(directory.resolve(ShmFiles.SWITCH_RING).toFile());
        IoUtil.unmap(broadcastMap);
        IoUtil.deleteIfExists(directory.resolve(ShmFiles.BROADCAST).toFile());
    }
}
