package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;

import java.nio.ByteBuffer;

/**
 * A modelled access link in front of a sans-IO endpoint, paced in user space (this kernel has no
 * netem): each packet, either way, waits for the link to be free, takes its size over the link's
 * rate, and arrives its propagation delay later.
 *
 * <pre>
 *   endpoint --send--> [up queue: rate, delay] --> transport --> switch
 *   endpoint <-deliver- [down queue: rate, delay] <-- transport <-- switch
 * </pre>
 *
 * Packets wait in two preallocated rings (no allocation per packet); one that finds its ring full is
 * dropped and counted, as a switch port's full queue drops, and loss recovery sends it again.
 *
 * <p>A <em>transfer</em> is what the link carries back to back: from a packet that finds the link
 * idle to the last before it is idle again. A transfer whose last packet is handed on more than
 * {@link #LATE_NS} after its modelled time is late (the host's timers or processor could not keep
 * up): the run's fidelity verdict counts those. Single packets inside a transfer may be handed on
 * late by a coarse timer and still arrive as a whole when the model says; what a round waits for is
 * the whole. Runs on the transport's thread, as the endpoint does.
 */
public final class ModelledLink implements PacketEndpoint {
    /** How late a packet may be handed on and still count as on time: the event loop's timer resolution. */
    public static final long LATE_NS = 1_000_000;
    /** Bytes each direction may hold waiting (a switch port's buffer). */
    public static final int QUEUE_BYTES = 8 << 20;

    /**
     * What a link carried, for a worker's result: packets and transfers both ways, the transfers that
     * ended more than {@link #LATE_NS} late and by how much at most, and the packets dropped.
     */
    public record Report(long packets, long transfers, long lateTransfers, long droppedPackets, double maxLateMs) {
    }

    private final PacketEndpoint inner;
    private final LinkModel link;
    private final PacketQueue up = new PacketQueue(QUEUE_BYTES);
    private final PacketQueue down = new PacketQueue(QUEUE_BYTES);
    /** When each direction's link is free again. */
    private long upFreeNs;
    private long downFreeNs;
    /** The time the endpoint is being called at: what its sends are stamped with. */
    private long nowNs;
    private final Outbox toLink = this::queueUp;
    private long packets;
    private long transfers;
    private long late;
    private long dropped;
    private long maxLateNs;
    /** How many times slower than its rate the link carries now (a communication straggler). */
    private double slowdown = 1.0;

    public ModelledLink(final PacketEndpoint inner, final LinkModel link) {
        if (!link.modelled()) {
            throw new IllegalArgumentException("a modelled link needs a rate");
        }
        this.inner = inner;
        this.link = link;
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length, final long now, final Outbox out) {
        final boolean idle = now >= downFreeNs;
        downFreeNs = Math.max(now, downFreeNs) + carryNs(length);
        if (!down.offer(downFreeNs + link.delayNs(), idle, port, buffer, offset, length)) {
            dropped++;
        }
        pump(now, out);
    }

    @Override
    public long onTimer(final long now, final Outbox out) {
        pump(now, out);
        nowNs = now;
        final long deadline = inner.onTimer(now, toLink);
        pump(now, out);
        return Math.min(deadline, Math.min(up.headDueNs(), down.headDueNs()));
    }

    /** Hands on every packet due by {@code now}: those arriving to the endpoint, then those leaving it. */
    private void pump(final long now, final Outbox out) {
        while (down.headDueNs() <= now) {
            final long lateNs = now - down.headDueNs();
            nowNs = now;
            inner.onPacket(down.headPort(), down.buffer(), down.headOffset(), down.headLength(), now, toLink);
            down.poll();
            account(lateNs, down.headStartsTransfer());
        }
        while (up.headDueNs() <= now) {
            final long lateNs = now - up.headDueNs();
            out.send(up.headPort(), up.buffer(), up.headOffset(), up.headLength());
            up.poll();
            account(lateNs, up.headStartsTransfer());
        }
    }

    private void queueUp(final int port, final ByteBuffer buffer, final int offset, final int length) {
        final boolean idle = nowNs >= upFreeNs;
        upFreeNs = Math.max(nowNs, upFreeNs) + carryNs(length);
        if (!up.offer(upFreeNs + link.delayNs(), idle, port, buffer, offset, length)) {
            dropped++;
        }
    }

    /** The time the link takes to carry {@code length} bytes now. */
    private long carryNs(final int length) {
        final long ns = link.serializationNs(length);
        return slowdown == 1.0 ? ns : (long) (ns * slowdown);
    }

    /** From now on the link carries {@code factor} times slower than its rate (1: at its rate); call on the transport's thread. */
    public void slowdown(final double factor) {
        if (!(factor >= 1.0) || Double.isInfinite(factor)) {
            throw new IllegalArgumentException("a link's slowdown must be a finite factor >= 1, was " + factor);
        }
        slowdown = factor;
    }

    /**
     * Counts a packet handed on {@code lateNs} after its modelled time; if it ended a transfer (the
     * packet after it, if any, found the link idle), counts the transfer, late by as much.
     */
    private void account(final long lateNs, final boolean endedTransfer) {
        packets++;
        if (!endedTransfer) {
            return;
        }
        transfers++;
        if (lateNs > LATE_NS) {
            late++;
            maxLateNs = Math.max(maxLateNs, lateNs);
        }
    }

    /** What the link carried so far (call on the transport's thread). */
    public Report report() {
        return new Report(packets, transfers, late, dropped, maxLateNs / 1e6);
    }

    /**
     * Packets in order of their due times (a link is FIFO), in one ring of bytes: each entry its due
     * time, port, length and whether it found the link idle (started a transfer), then its bytes, 8-byte aligned; an entry that does not fit before the
     * ring's end starts at its beginning, a marker (port -1) saying so where there is room for one.
     */
    static final class PacketQueue {
        private static final int HEADER = 24;
        private final ByteBuffer ring;
        /** The same bytes as handed on: whoever reads a packet may set its byte order, which the ring's own fields must not see. */
        private final ByteBuffer view;
        private final int capacity;
        private int head;
        private int tail;
        private int count;

        PacketQueue(final int capacity) {
            this.capacity = capacity;
            this.ring = ByteBuffer.allocate(capacity);
            this.view = ring.duplicate();
        }

        /**
         * Queues a copy of the packet, due at {@code dueNs}, starting a transfer if {@code startsTransfer};
         * false (nothing queued) if the ring is full.
         */
        boolean offer(final long dueNs, final boolean startsTransfer, final int port, final ByteBuffer src, final int offset,
                      final int length) {
            final int size = (HEADER + length + 7) & ~7;
            if (count == 0) {
                head = 0;
                tail = 0;
            }
            int at = tail;
            if (count == 0 || tail > head) {
                if (capacity - tail < size) {
                    // wrap: only if the entry fits before the head
                    if (size >= head || (count > 0 && head == 0)) {
                        return false;
                    }
                    if (capacity - tail >= HEADER) {
                        ring.putInt(tail + 8, -1);
                    }
                    at = 0;
                }
            } else if (tail + size > head) {
                return false;
            }
            ring.putLong(at, dueNs);
            ring.putInt(at + 8, port);
            ring.putInt(at + 12, length);
            ring.putInt(at + 16, startsTransfer ? 1 : 0);
            ring.put(at + HEADER, src, offset, length);
            tail = at + size;
            count++;
            return true;
        }

        /** The due time of the first packet, or {@link PacketEndpoint#NO_DEADLINE} if none waits. */
        long headDueNs() {
            if (count == 0) {
                return NO_DEADLINE;
            }
            skipMarker();
            return ring.getLong(head);
        }

        int headPort() {
            return ring.getInt(head + 8);
        }

        int headLength() {
            return ring.getInt(head + 12);
        }

        int headOffset() {
            return head + HEADER;
        }

        /** Whether the first packet started a transfer; true when none waits (whatever comes next will). */
        boolean headStartsTransfer() {
            return count == 0 || ring.getInt(head + 16) == 1;
        }

        /** The bytes of the packets, to hand on (a view of the ring of its own: its byte order is the reader's). */
        ByteBuffer buffer() {
            return view;
        }

        void poll() {
            head += (HEADER + headLength() + 7) & ~7;
            count--;
            if (count > 0) {
                skipMarker();
            }
        }

        int size() {
            return count;
        }

        private void skipMarker() {
            if (capacity - head < HEADER || ring.getInt(head + 8) == -1) {
                head = 0;
            }
        }
    }
}
