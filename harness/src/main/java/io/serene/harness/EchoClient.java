package io.serene.harness;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketFlyweight;
import io.serene.protocol.PacketType;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The raw-UDP baseline's client: streams packets of the aggregation's size through an echo server
 * with the same sliding window as a worker (one packet in flight per pool slot), resending any
 * packet not echoed within a timeout. Measures what the sockets and batching deliver without
 * aggregation.
 */
final class EchoClient implements PacketEndpoint {
    private static final long RESEND_NS = 20_000_000L;

    private final int serverPort;
    private final int packetLength;
    private final int window;
    private final ByteBuffer tx;
    private final PacketFlyweight flyweight = new PacketFlyweight();
    private final PacketFlyweight received = new PacketFlyweight();
    private final long[] sentNs;
    private final boolean[] done;
    private long nextSeq;
    private long oldestSeq;
    private long target;
    private long resent;
    private CompletableFuture<Void> finished = CompletableFuture.completedFuture(null);

    EchoClient(final int serverPort, final int packetLength, final int window) {
        this.serverPort = serverPort;
        this.packetLength = packetLength;
        this.window = window;
        this.tx = PacketFlyweight.allocate(packetLength);
        this.sentNs = new long[window];
        this.done = new boolean[window];
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

    long resent() {
        return resent;
    }

    @Override
    public void onPacket(final int port, final ByteBuffer buffer, final int offset, final int length,
                         final long nowNs, final Outbox out) {
        if (length < PacketFlyweight.HEADER_LENGTH) {
            return;
        }
        final long seq = received.wrap(buffer, offset, length).seq();
        if (seq >= oldestSeq && seq < nextSeq) {
            done[(int) (seq % window)] = true;
            while (oldestSeq < nextSeq && done[(int) (oldestSeq % window)]) {
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
        for (long seq = oldestSeq; seq < nextSeq; seq++) {
            final int e = (int) (seq % window);
            if (!done[e]) {
                if (sentNs[e] + RESEND_NS <= nowNs) {
                    send(seq, nowNs, out);
                    resent++;
                }
                earliest = Math.min(earliest, sentNs[e] + RESEND_NS);
            }
        }
        return earliest;
    }

    private void pump(final long nowNs, final Outbox out) {
        while (nextSeq < target && nextSeq - oldestSeq < window) {
            done[(int) (nextSeq % window)] = false;
            send(nextSeq, nowNs, out);
            nextSeq++;
        }
    }

    private void send(final long seq, final long nowNs, final Outbox out) {
        sentNs[(int) (seq % window)] = nowNs;
        flyweight.wrap(tx, 0, packetLength).initHeader(PacketType.DATA).seq(seq);
        out.send(serverPort, tx, 0, packetLength);
    }
}
