package io.serene.transport;

import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.PriorityQueue;
import java.util.function.BooleanSupplier;

/**
 * A deterministic in-process network in virtual time: endpoints are attached and get an address
 * (the port others use to reach them, and the port they see packets arrive from); every packet
 * goes through a seeded {@link FaultInjector} and arrives after a latency plus seeded jitter.
 * One thread runs everything; the same seed gives the same run.
 */
public final class InProcessNetwork {
    private static final class Event implements Comparable<Event> {
        final long timeNs;
        final long order;
        final int from;
        final int to;
        final byte[] data; // null: a timer event or a task
        final Runnable task;

        Event(final long timeNs, final long order, final int from, final int to, final byte[] data) {
            this(timeNs, order, from, to, data, null);
        }

        Event(final long timeNs, final long order, final int from, final int to, final byte[] data, final Runnable task) {
            this.timeNs = timeNs;
            this.order = order;
            this.from = from;
            this.to = to;
            this.data = data;
            this.task = task;
        }

        @Override
        public int compareTo(final Event other) {
            final int byTime = Long.compare(timeNs, other.timeNs);
            return byTime != 0 ? byTime : Long.compare(order, other.order);
        }
    }

    private PacketEndpoint[] endpoints = new PacketEndpoint[16];
    /** Each endpoint's outbox, made once (not per event). */
    private Outbox[] outboxes = new Outbox[16];
    /** Each endpoint's earliest timer event queued (NO_DEADLINE: none). */
    private long[] scheduledTimer = new long[16];
    private int attached;
    private final PriorityQueue<Event> events = new PriorityQueue<>();
    private final FaultInjector faults;
    private final long latencyNs;
    private final long jitterNs;
    private final long reorderDelayNs;
    private long nowNs;
    private long order;
    private long delivered;
    private long processed;

    /**
     * @param faults         loss, duplication and reordering; also the seeded source of jitter
     * @param latencyNs      one-way base latency
     * @param jitterNs       extra uniform delay in [0, jitterNs) per packet
     * @param reorderDelayNs extra uniform delay in [0, reorderDelayNs) for a packet chosen for reordering
     */
    public InProcessNetwork(final FaultInjector faults, final long latencyNs, final long jitterNs,
                            final long reorderDelayNs) {
        this.faults = faults;
        this.latencyNs = latencyNs;
        this.jitterNs = jitterNs;
        this.reorderDelayNs = reorderDelayNs;
    }

    /** Attaches an endpoint and returns its address; its first timer call happens at the current time. */
    public int attach(final PacketEndpoint endpoint) {
        final int address = attached++;
        if (address == endpoints.length) {
            endpoints = Arrays.copyOf(endpoints, 2 * address);
            outboxes = Arrays.copyOf(outboxes, 2 * address);
            scheduledTimer = Arrays.copyOf(scheduledTimer, 2 * address);
        }
        endpoints[address] = endpoint;
        scheduledTimer[address] = PacketEndpoint.NO_DEADLINE;
        outboxes[address] = new Outbox() {
            @Override
            public void send(final int port, final ByteBuffer buffer, final int offset, final int length) {
                InProcessNetwork.this.send(address, port, buffer, offset, length, null);
            }

            @Override
            public void multicast(final int[] ports, final int count, final ByteBuffer buffer, final int offset, final int length) {
                // the bytes copied once for every recipient, as a switch's multicast engine replicates a
                // packet: receivers parse packets in place and never write them (as over shared memory)
                byte[] shared = null;
                for (int i = 0; i < count; i++) {
                    shared = InProcessNetwork.this.send(address, ports[i], buffer, offset, length, shared);
                }
            }
        };
        wake(address);
        return address;
    }

    public long nowNs() {
        return nowNs;
    }

    public long delivered() {
        return delivered;
    }

    public long eventsProcessed() {
        return processed;
    }

    public FaultInjector faults() {
        return faults;
    }

    /** Runs a task at a virtual time (not before now), in order with packets and timers. */
    public void schedule(final long atNs, final Runnable task) {
        events.add(new Event(Math.max(atNs, nowNs), order++, -1, -1, null, task));
    }

    /** Schedules a timer call of the endpoint now, e.g. after work was handed to it from outside. */
    public void wake(final int address) {
        scheduleTimer(address, nowNs);
    }

    /** Runs events until {@code done} holds, the queue is empty, or virtual time passes {@code untilNs}. */
    public boolean runUntil(final BooleanSupplier done, final long untilNs) {
        while (!done.getAsBoolean()) {
            final Event event = events.peek();
            if (event == null || event.timeNs > untilNs) {
                return done.getAsBoolean();
            }
            events.poll();
            nowNs = Math.max(nowNs, event.timeNs);
            processed++;
            if (event.task != null) {
                event.task.run();
                continue;
            }
            final PacketEndpoint endpoint = endpoints[event.to];
            final Outbox outbox = outboxes[event.to];
            if (event.data == null) {
                if (scheduledTimer[event.to] != event.timeNs) {
                    continue; // superseded by an earlier timer
                }
                scheduledTimer[event.to] = PacketEndpoint.NO_DEADLINE;
            } else {
                delivered++;
                endpoint.onPacket(event.from, ByteBuffer.wrap(event.data).order(ByteOrder.LITTLE_ENDIAN), 0, event.data.length, nowNs, outbox);
            }
            final long deadline = endpoint.onTimer(nowNs, outbox);
            if (deadline != PacketEndpoint.NO_DEADLINE) {
                scheduleTimer(event.to, Math.max(deadline, nowNs));
            }
        }
        return true;
    }

    private void scheduleTimer(final int address, final long atNs) {
        if (atNs < scheduledTimer[address]) {
            scheduledTimer[address] = atNs;
            events.add(new Event(atNs, order++, address, address, null));
        }
    }

    /**
     * Sends {@code length} bytes at {@code offset} of {@code buffer} through the fault injector;
     * {@code shared} (may be null) holds those bytes already. Returns the array the packet's copies
     * share (null if none was needed).
     */
    private byte[] send(final int from, final int to, final ByteBuffer buffer, final int offset, final int length, final byte[] shared) {
        if (to < 0 || to >= attached) {
            return shared; // no such address: the packet vanishes, as on a real network
        }
        byte[] data = shared;
        final int copies = faults.copies();
        for (int c = 0; c < copies; c++) {
            if (data == null) {
                data = new byte[length];
                buffer.get(offset, data);
            }
            long delay = latencyNs + faults.nextLong(jitterNs);
            if (faults.reorder()) {
                delay += faults.nextLong(reorderDelayNs);
            }
            events.add(new Event(nowNs + delay, order++, from, to, data));
        }
        return data;
    }
}
