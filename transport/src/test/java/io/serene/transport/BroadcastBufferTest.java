package io.serene.transport;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

class BroadcastBufferTest {
    private static final int CAPACITY = 1 << 16;

    private static SpscRing ring() {
        return new SpscRing(new UnsafeBuffer(ByteBuffer.allocateDirect(SpscRing.fileBytes(1 << 16))));
    }

    /** A reference in a peer's ring, as the serving host writes one. */
    private static boolean refer(final SpscRing ring, final BroadcastBuffer.Pins pins, final long position, final int length) {
        final UnsafeBuffer ref = new UnsafeBuffer(new byte[BroadcastBuffer.REFERENCE_LENGTH]);
        ref.putLong(0, position);
        ref.putInt(8, length);
        if (!ring.write(3, ref, 0, ref.capacity())) {
            return false;
        }
        pins.add(position);
        return true;
    }

    @Test
    void aRecordStaysUntilEveryRecipientReadItsReferenceAndIsNeverOverwrittenBefore() {
        for (long seed = 1; seed <= 5; seed++) {
            final long s = seed;
            final SplittableRandom random = new SplittableRandom(seed);
            final UnsafeBuffer memory = new UnsafeBuffer(ByteBuffer.allocateDirect(CAPACITY));
            final BroadcastBuffer broadcast = new BroadcastBuffer(memory);
            final SpscRing[] rings = {ring(), ring(), ring()};
            final BroadcastBuffer.Pins[] pins = {new BroadcastBuffer.Pins(rings[0]), new BroadcastBuffer.Pins(rings[1]),
                new BroadcastBuffer.Pins(rings[2])};
            final UnsafeBuffer src = new UnsafeBuffer(new byte[4000]);
            long written = 0;
            long refused = 0;
            final long[] checked = {0};
            final java.util.Map<Long, Integer> messageAt = new java.util.HashMap<>();
            for (int m = 0; m < 5_000; m++) {
                final int length = 1 + random.nextInt(4000);
                for (int i = 0; i < length; i++) {
                    src.putByte(i, (byte) (m * 13 + i));
                }
                final long position = broadcast.write(src, 0, length, pins, pins.length);
                if (position < 0) {
                    refused++;
                } else {
                    written++;
                    messageAt.put(position, m);
                    for (int p = 0; p < rings.length; p++) {
                        refer(rings[p], pins[p], position, length);
                    }
                }
                // each peer reads some of its references (peer 2 now and then not at all), checking the record's bytes
                for (int p = 0; p < rings.length; p++) {
                    if (p == 2 && random.nextInt(4) != 0) {
                        continue;
                    }
                    rings[p].read((type, buffer, index, len) -> {
                        final long at = buffer.getLong(index);
                        final int n = buffer.getInt(index + 8);
                        final int idx = BroadcastBuffer.indexOf(at, n, CAPACITY);
                        assertThat(idx).isNotNegative();
                        final int message = messageAt.get(at);
                        for (int i = 0; i < n; i++) {
                            if ((byte) (message * 13 + i) != memory.getByte(idx + i)) {
                                throw new AssertionError("seed " + s + ": record at " + at + " was overwritten before every peer read it");
                            }
                        }
                        checked[0]++;
                    }, 1 + random.nextInt(3));
                }
            }
            assertThat(written).as("seed " + seed).isGreaterThan(1000);
            assertThat(refused).as("seed " + seed + ": a slow peer holds records, so some multicasts are copies").isPositive();
            assertThat(checked[0]).isPositive();
        }
    }

    @Test
    void aPeerThatNeverReadsHoldsTheBufferUntilItsPinsAreDropped() {
        final BroadcastBuffer broadcast = new BroadcastBuffer(new UnsafeBuffer(ByteBuffer.allocateDirect(CAPACITY)));
        final SpscRing slow = ring();
        final BroadcastBuffer.Pins[] pins = {new BroadcastBuffer.Pins(slow)};
        final UnsafeBuffer src = new UnsafeBuffer(new byte[1000]);
        final List<Long> positions = new ArrayList<>();
        long position;
        while ((position = broadcast.write(src, 0, 1000, pins, 1)) >= 0) {
            positions.add(position);
            assertThat(refer(slow, pins[0], position, 1000)).isTrue();
        }
        // 1024-byte records (64-byte aligned) fill the 64 KiB
        assertThat(positions).hasSize(CAPACITY / 1024);
        // the peer reads half its references: half the buffer is free again
        assertThat(slow.read((t, b, i, l) -> { }, CAPACITY / 2048)).isEqualTo(CAPACITY / 2048);
        int more = 0;
        while (broadcast.write(src, 0, 1000, pins, 1) >= 0) {
            more++;
        }
        assertThat(more).isEqualTo(CAPACITY / 2048);
        // the peer is forgotten (its goodbye): nothing holds the buffer
        pins[0] = null;
        assertThat(broadcast.write(src, 0, 1000, pins, 1)).isNotNegative();
    }

    @Test
    void aReferenceOutsideTheBufferHasNoIndex() {
        assertThat(BroadcastBuffer.indexOf(0, 100, CAPACITY)).isZero();
        assertThat(BroadcastBuffer.indexOf(3L * CAPACITY + 64, 100, CAPACITY)).isEqualTo(64);
        assertThat(BroadcastBuffer.indexOf(CAPACITY - 64, 65, CAPACITY)).isEqualTo(-1);
        assertThat(BroadcastBuffer.indexOf(-64, 10, CAPACITY)).isEqualTo(-1);
        assertThat(BroadcastBuffer.indexOf(64, -1, CAPACITY)).isEqualTo(-1);
    }
}
