package io.serene.transport;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.util.internal.PlatformDependent;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * A UDP host's pending GSO runs, one per peer: packets of one size to one peer are appended to its
 * run (at most {@link #MAX_SEGMENTS} of them, {@link #MAX_BYTES} in all) and go out as one
 * segmented datagram when the run is full, the size changes, or the burst ends ({@link #flushAll}).
 * Event loop thread only.
 */
final class GsoRuns {
    static final int MAX_SEGMENTS = 64;
    static final int MAX_BYTES = 65000;
    /** Raw memory copies need Netty's Unsafe access (refused by default on newer JDKs). */
    static final boolean UNSAFE_COPY = PlatformDependent.hasUnsafe();

    /** Where a finished run goes: the peer's index, the run, its segments' size and how many it holds. */
    @FunctionalInterface
    interface Sink {
        void write(int peer, ByteBuf run, int segment, int count);
    }

    private final Sink sink;
    private ByteBuf[] runs = new ByteBuf[16];
    private int[] runSegment = new int[16];
    private int[] runCount = new int[16];
    private boolean[] dirty = new boolean[16];
    private int[] dirtyPorts = new int[16];
    private int dirtyCount;

    GsoRuns(final Sink sink) {
        this.sink = sink;
    }

    /** Appends a packet to peer's run, flushing the run first if the packet does not fit it. */
    void append(final ByteBufAllocator alloc, final int peer, final ByteBuffer buffer, final int offset, final int length) {
        if (peer >= runs.length) {
            grow(peer);
        }
        ByteBuf run = runs[peer];
        if (run != null && (length != runSegment[peer] || runCount[peer] == MAX_SEGMENTS || run.readableBytes() + length > MAX_BYTES)) {
            flush(peer);
            run = null;
        }
        if (run == null) {
            run = alloc.directBuffer(Math.min(MAX_BYTES, length * MAX_SEGMENTS));
            runs[peer] = run;
            runSegment[peer] = length;
            runCount[peer] = 0;
            if (!dirty[peer]) {
                dirty[peer] = true;
                dirtyPorts[dirtyCount++] = peer;
            }
        }
        writeInto(run, buffer, offset, length);
        runCount[peer]++;
    }

    /** Hands the peer's pending run, if any, to the sink. */
    void flush(final int peer) {
        if (peer >= runs.length) {
            return;
        }
        final ByteBuf run = runs[peer];
        if (run == null) {
            return;
        }
        runs[peer] = null;
        sink.write(peer, run, runSegment[peer], runCount[peer]);
    }

    /** Hands every pending run to the sink: the end of a burst. */
    void flushAll() {
        for (int i = 0; i < dirtyCount; i++) {
            dirty[dirtyPorts[i]] = false;
            flush(dirtyPorts[i]);
        }
        dirtyCount = 0;
    }

    private void grow(final int peer) {
        final int size = Integer.highestOneBit(peer) << 1;
        runs = Arrays.copyOf(runs, size);
        runSegment = Arrays.copyOf(runSegment, size);
        runCount = Arrays.copyOf(runCount, size);
        dirty = Arrays.copyOf(dirty, size);
        dirtyPorts = Arrays.copyOf(dirtyPorts, size);
    }

    /** Copies {@code length} bytes at {@code offset} of {@code buffer} to the end of {@code target}. */
    static void writeInto(final ByteBuf target, final ByteBuffer buffer, final int offset, final int length) {
        target.ensureWritable(length);
        final int at = target.writerIndex();
        if (UNSAFE_COPY && buffer.isDirect() && target.hasMemoryAddress()) {
            PlatformDependent.copyMemory(PlatformDependent.directBufferAddress(buffer) + offset,
                target.memoryAddress() + at, length);
            target.writerIndex(at + length);
        } else {
            // engines address their buffers absolutely, so position and limit are free to use here
            buffer.clear();
            buffer.position(offset).limit(offset + length);
            target.writeBytes(buffer);
            buffer.clear();
        }
    }
}
