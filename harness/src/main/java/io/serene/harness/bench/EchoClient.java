package io.serene.harness.bench;

import io.serene.protocol.DataPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.RttEstimator;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The raw-UDP baseline's client: streams packets of the aggregation's size through an echo server
 * with the same sliding window and the same loss recovery as a worker (a packet is resent when
 * echoes of three later-sent packets came back first, or after an adaptive timeout). Measures what
 * the sockets, threads and batching deliver without aggregation.
 */
final class EchoClient implements PacketEndpoint {
    private static final int REORDER_THRESHOLD = 3;
    private static final long MIN_PROBE_NS = 200_000L;

    private final int serverPort;
    private final int packetLength;
    private final int window;
    private final int mask;
    private final ByteBuffer tx;
    private final DataPacket flyweight = new DataPacket();
    private final PacketHeader received = new PacketHeader();
    private final RttEstimator rtt = new RttEstimator(20_000_000L, 500_000L, 500_000_000L);
    private final long[] sentNs;
    private final long[] stamps;
    private final boolean[] resent;
    private final boolean[] done;
    private long stamp;
    private long minRttNs = Long.MAX_VALUE / 8;
    private long nextSeq;
    private long oldestSeq;
    private long target;
    private long resends;
    private CompletableFuture<Void> finished = CompletableFuture.completedFuture(null);

    EchoClient(final int serverPort, final int packetLength, final int window) {
        this.serverPort = serverPort;
        this.packetLength = packetLength;
        this.window = window;
        final int entries = Integer.highestOneBit(Math.max(1, window - 1)) << 1;
        this.mask = entries - 1;
        this.tx = Packet.allocate(packetLength);
        this.sentNs = new long[entries];
        this.stamps = new long[entries];
        this.resent = new boolean[entries];
        this.done = new boolean[entries];
    }

    /** Echoes {@code packets} more packets; call on the endpoint's thread. */
    CompletableFuture<Void> start(final long packets) {
        target = nextSeq + packets;
        finished = new CompletableFuture<>();
        if (packets == 0) {
            finished.complete(null);
        }
        return finished;
    }

    long resends() {
        return resends;
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox out) {
        if (length < Packet.HEADER_LENGTH) {
            return;
        }
        final long seq = received.wrap(buffer, offset, length).seq();
        final int e = (int) seq & mask;
        if (seq >= oldestSeq && seq < nextSeq && !done[e]) {
            done[e] = true;
            if (!resent[e]) {
                rtt.sample(nowNs - sentNs[e]);
                minRttNs = Math.min(minRttNs, nowNs - sentNs[e]);
            }
            for (long s = oldestSeq; s <= seq - REORDER_THRESHOLD; s++) {
                final int p = (int) s & mask;
                if (!done[p] && stamps[p] < stamps[e]) {
                    send(s, nowNs, out);
                }
            }
            while (oldestSeq < nextSeq && done[(int) oldestSeq & mask]) {
                oldestSeq++;
            }
            if (oldestSeq == target) {
                finished.complete(null);
            }
        }
        pump(nowNs, out);
    }

    @Override
    public long onTimer(final long nowNs, final Outbox out) {
        pump(nowNs, out);
        long earliest = NO_DEADLINE;
        // the worker's tail loss probe: once everything is sent, unanswered packets are probed
        // after a few unloaded round trips instead of a full timeout
        final long probeNs = Math.max(MIN_PROBE_NS, 4 * minRttNs);
        final boolean draining = nextSeq == target;
        for (long seq = oldestSeq; seq < nextSeq; seq++) {
            final int e = (int) seq & mask;
            if (!done[e]) {
                final long timeout = draining && !resent[e] ? Math.min(rtt.rtoNs(), probeNs) : rtt.rtoNs();
                if (sentNs[e] + timeout <= nowNs) {
                    send(seq, nowNs, out);
                }
                earliest = Math.min(earliest, sentNs[e] + timeout);
            }
        }
        return earliest;
    }

    private void pump(final long nowNs, final Outbox out) {
        while (nextSeq < target && nextSeq - oldestSeq < window) {
            final int e = (int) nextSeq & mask;
            done[e] = false;
            resent[e] = false;
            send(nextSeq, nowNs, out);
            nextSeq++;
        }
    }

    private void send(final long seq, final long nowNs, final Outbox out) {
        final int e = (int) seq & mask;
        if (stamps[e] != 0 && seq < nextSeq) {
            resent[e] = true;
            resends++;
        }
        sentNs[e] = nowNs;
        stamps[e] = ++stamp;
        flyweight.wrap(tx, 0, packetLength).initHeader(PacketType.DATA).seq(seq);
        out.send(serverPort, tx, 0, packetLength);
    }
}
