package io.serene.harness;

import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.PacketHeader;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.BiPredicate;
import java.util.function.BooleanSupplier;

/**
 * A wire a test steers packet by packet: endpoints at addresses 0, 1, 2, ... (the switch first),
 * packets delivered in order, one at a time, then every timer fired, 1 ms of virtual time a step.
 * The test decides which packets never arrive ({@link #drop}), which arrive later ({@link #hold}),
 * what it sees of each delivered one ({@link #tap}) and what it forges ({@link #inject}).
 */
final class ManualWire {
    final List<PacketEndpoint> nodes = new ArrayList<>();
    private final ArrayDeque<Object[]> queue = new ArrayDeque<>();
    private final ArrayDeque<Object[]> injected = new ArrayDeque<>();
    private final ArrayDeque<Object[]> held = new ArrayDeque<>();
    private final PacketHeader header = new PacketHeader();
    /** Packets (source, destination, header) that never arrive. */
    BiPredicate<Integer, Integer> cut = (source, to) -> false;
    /** Packets (destination, header) that never arrive. */
    BiPredicate<Integer, PacketHeader> drop = (to, h) -> false;
    /** Sees each packet delivered (source, bytes) just after its destination took it. */
    BiConsumer<Integer, ByteBuffer> tap = (source, packet) -> { };
    private int holdFor = -1;
    private long holdUntilNs;
    long nowNs;

    /** The endpoint at the next address. */
    ManualWire attach(final PacketEndpoint endpoint) {
        nodes.add(endpoint);
        return this;
    }

    /** What an endpoint at {@code address} sends goes on the wire (a copy of its bytes). */
    Outbox from(final int address) {
        return (port, buffer, offset, length) -> {
            final ByteBuffer copy = Packet.allocate(length);
            for (int i = 0; i < length; i++) {
                copy.put(i, buffer.get(offset + i));
            }
            queue.add(new Object[] {address, port, copy});
        };
    }

    /** A forged packet from {@code source} to {@code to}, delivered before anything else on the wire. */
    void inject(final int source, final int to, final ByteBuffer packet) {
        injected.add(new Object[] {source, to, packet});
    }

    /** Packets to {@code address} (not forged ones) wait until virtual time {@code untilNs}. */
    void hold(final int address, final long untilNs) {
        holdFor = address;
        holdUntilNs = untilNs;
    }

    /** Delivers packets and fires timers until {@code done} or {@code steps} steps of 1 ms; whether done. */
    boolean runUntil(final BooleanSupplier done, final int steps) {
        for (int step = 0; step < steps && !done.getAsBoolean(); step++) {
            if (nowNs >= holdUntilNs) {
                queue.addAll(held);
                held.clear();
            }
            while (!queue.isEmpty() || !injected.isEmpty()) {
                final boolean forged = !injected.isEmpty();
                final Object[] p = forged ? injected.poll() : queue.poll();
                final int source = (Integer) p[0];
                final int to = (Integer) p[1];
                final ByteBuffer packet = (ByteBuffer) p[2];
                if (cut.test(source, to) || drop.test(to, header.wrap(packet, 0, packet.capacity()))) {
                    continue;
                }
                if (to == holdFor && nowNs < holdUntilNs && !forged) {
                    held.add(p);
                    continue;
                }
                nodes.get(to).onPacket(source, packet, 0, packet.capacity(), nowNs, from(to));
                tap.accept(source, packet);
            }
            nowNs += 1_000_000;
            for (int a = 0; a < nodes.size(); a++) {
                nodes.get(a).onTimer(nowNs, from(a));
            }
        }
        return done.getAsBoolean();
    }
}
