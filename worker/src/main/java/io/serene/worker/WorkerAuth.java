package io.serene.worker;

import io.serene.protocol.JobKeys;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketAuth;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.ReplayWindow;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A worker's packet authentication: numbers and signs every packet it sends with its key, and
 * takes a packet from the switch only if it carries the job's reply MAC and a number new to its
 * replay window. The window starts at the first JOIN_ACK that answers one of this engine's JOINs
 * (the ACK echoes the JOIN's number), so nothing the switch sent before, to this or another
 * incarnation, is taken. Without a key nothing is signed or checked.
 */
final class WorkerAuth {
    private final JobKeys.WorkerKey key;
    private final AtomicLong numbers;
    private final PacketHeader out = new PacketHeader();
    private final long[] highest = new long[1];
    private final long[] seen = new long[ReplayWindow.WORDS];
    private boolean started;
    private long firstJoin = -1;

    WorkerAuth(final WorkerContext ctx) {
        this.key = ctx.key();
        this.numbers = ctx.packetNumbers();
    }

    boolean keyed() {
        return key != null;
    }

    /** Numbers and signs the packet of {@code length} bytes at the start of {@code buffer}. */
    void seal(final ByteBuffer buffer, final int length) {
        out.wrap(buffer, 0, length);
        final long n = numbers.getAndIncrement();
        if (firstJoin < 0 && out.typeCode() == PacketType.JOIN.code()) {
            firstJoin = n;
        }
        if (key == null) {
            out.packetNumber(n);
        } else {
            PacketAuth.seal(key.k0(), key.k1(), n, out);
        }
    }

    /** Null if the switch's packet may go on, else the drop to count. */
    WorkerCounter check(final Packet<?> in) {
        if (key == null) {
            return null;
        }
        if (!PacketAuth.verify(key.r0(), key.r1(), in)) {
            return WorkerCounter.DROP_BAD_MAC;
        }
        final long n = in.packetNumber();
        if (!started) {
            // only a JOIN_ACK echoing one of this engine's JOINs proves the switch's numbers fresh
            if (in.typeCode() != PacketType.JOIN_ACK.code() || firstJoin < 0 || in.seq() < firstJoin) {
                return WorkerCounter.DROP_REPLAYED;
            }
            started = true;
            ReplayWindow.startAt(highest, seen, 0, n);
            return null;
        }
        return ReplayWindow.take(highest, seen, 0, n) ? null : WorkerCounter.DROP_REPLAYED;
    }
}
