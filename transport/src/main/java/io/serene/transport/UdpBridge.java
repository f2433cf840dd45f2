package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import org.agrona.MutableDirectBuffer;
import org.agrona.concurrent.MessageHandler;
import org.agrona.concurrent.UnsafeBuffer;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * UDP for a switch served over shared memory: its endpoint hears peers on a UDP socket too, so
 * workers on its host reach it at memory speed and workers on other hosts over UDP, in one job.
 * The endpoint stays single-threaded on the {@link ShmHost}'s thread: the UDP host (on its own
 * thread) hands each packet over through a one-to-one ring in this process, and the switch's
 * packets to UDP peers come back through another; the endpoint sees a UDP peer's port with
 * {@link PeerPorts#LINK_BIT} set, which no shared-memory peer's port has. A full ring drops the
 * packet and counts it, as a full socket buffer would.
 */
public final class UdpBridge implements AutoCloseable {
    /** Bytes of each of the two rings between the threads. */
    static final int RING_BYTES = 32 << 20;

    private final ByteBuffer toSwitchMemory = ByteBuffer.allocateDirect(SpscRing.fileBytes(RING_BYTES)).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer toUdpMemory = ByteBuffer.allocateDirect(SpscRing.fileBytes(RING_BYTES)).order(ByteOrder.LITTLE_ENDIAN);
    /** Packets from UDP peers: the UDP host's thread writes, the shared-memory host's reads. */
    private final SpscRing toSwitch = new SpscRing(new UnsafeBuffer(toSwitchMemory));
    /** Packets to UDP peers: the shared-memory host's thread writes, the UDP host's reads. */
    private final SpscRing toUdp = new SpscRing(new UnsafeBuffer(toUdpMemory));
    private final AtomicBoolean wakePending = new AtomicBoolean();
    private final AtomicLong dropped = new AtomicLong();
    private final Runnable nothing = () -> { };
    private final ShmServer switchHost;
    private UdpHost udp;

    private UdpBridge(final ShmServer switchHost) {
        this.switchHost = switchHost;
    }

    /**
     * Serves the endpoint of {@code switchHost} (a serving host) over UDP at {@code local} too
     * (port 0: any free port), on a thread of {@code transport}.
     */
    public static UdpBridge attach(final ShmServer switchHost, final UdpTransport transport, final InetSocketAddress local,
                                   final UdpOptions options) {
        final UdpBridge bridge = new UdpBridge(switchHost);
        switchHost.attach(bridge.toSwitch, bridge.toSwitchMemory, bridge.toUdp, bridge::wakeUdp);
        bridge.udp = transport.bind(bridge.new Relay(), local, options);
        return bridge;
    }

    /** The UDP socket's address (what workers on other hosts give as --switch). */
    public InetSocketAddress localAddress() {
        return udp.localAddress();
    }

    /** Packets dropped because a ring between the threads was full. */
    public long dropped() {
        return dropped.get() + switchHost.bridgeDrops();
    }

    /** Called on the shared-memory host's thread after it wrote into {@link #toUdp}: runs the relay's drain on the UDP thread. */
    private void wakeUdp() {
        if (wakePending.compareAndSet(false, true)) {
            udp.execute(nothing);
        }
    }

    @Override
    public void close() {
        switchHost.detach();
        udp.close();
    }

    /** The UDP host's endpoint: hands packets to the switch's thread, and sends the switch's to UDP peers. */
    private final class Relay implements PacketEndpoint, MessageHandler {
        private final UnsafeBuffer view = new UnsafeBuffer(0, 0);
        private Outbox out;

        @Override
        public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length, final long nowNs,
                             final Outbox outbox) {
            view.wrap(buffer, offset, length);
            if (!toSwitch.write(port, view, 0, length)) {
                dropped.incrementAndGet();
            }
        }

        @Override
        public long onTimer(final long nowNs, final Outbox outbox) {
            // cleared before the drain: a packet written after it wakes the thread again
            wakePending.set(false);
            out = outbox;
            toUdp.read(this, Integer.MAX_VALUE);
            return NO_DEADLINE;
        }

        @Override
        public void onMessage(final int port, final MutableDirectBuffer buffer, final int index, final int length) {
            out.send(port, toUdpMemory, index, length);
        }
    }
}
