package io.serene.transport;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SpscRingTest {
    private static SpscRing ring(final int capacity) {
        return new SpscRing(new UnsafeBuffer(ByteBuffer.allocateDirect(SpscRing.fileBytes(capacity))));
    }

    /** A message's bytes: its number, its length, then bytes derived from both. */
    private static void fill(final UnsafeBuffer buf, final long number, final int length) {
        for (int i = 0; i < length; i++) {
            buf.putByte(i, (byte) (number * 31 + i * 7 + length));
        }
    }

    private static boolean sameBytes(final org.agrona.DirectBuffer a, final int at, final UnsafeBuffer b, final int length) {
        for (int i = 0; i < length; i++) {
            if (a.getByte(at + i) != b.getByte(i)) {
                return false;
            }
        }
        return true;
    }

    @Test
    @Timeout(60)
    void aWriterAndAReaderOnTwoThreadsPassEveryMessageIntactAndInOrderOverManyLaps() throws Exception {
        for (long seed = 1; seed <= 3; seed++) {
            final long s = seed;
            final SpscRing ring = ring(1 << 14);
            final int messages = 200_000;
            final AtomicReference<Throwable> failure = new AtomicReference<>();
            final Thread writer = new Thread(() -> {
                final SplittableRandom random = new SplittableRandom(s);
                final UnsafeBuffer src = new UnsafeBuffer(new byte[ring.maxMessageLength()]);
                for (long m = 0; m < messages; m++) {
                    // lengths of every residue modulo 8, from empty to the largest the ring takes
                    final int length = random.nextInt(8) == 0 ? ring.maxMessageLength() : random.nextInt(300);
                    fill(src, m, length);
                    while (!ring.write((int) (m & 0x3FFF_FFFF), src, 0, length)) {
                        Thread.onSpinWait();
                    }
                }
            });
            writer.start();
            final long[] next = {0};
            final SplittableRandom lengths = new SplittableRandom(s);
            final UnsafeBuffer expected = new UnsafeBuffer(new byte[ring.maxMessageLength()]);
            while (next[0] < messages && failure.get() == null) {
                ring.read((type, buffer, index, length) -> {
                    final long m = next[0]++;
                    final int want = lengths.nextInt(8) == 0 ? ring.maxMessageLength() : lengths.nextInt(300);
                    fill(expected, m, want);
                    if (type != (int) (m & 0x3FFF_FFFF) || length != want
                        || !sameBytes(buffer, index, expected, length)) {
                        failure.compareAndSet(null, new AssertionError("seed " + s + ": message " + m + " came as type "
                            + type + ", " + length + " bytes (wanted " + want + "), or with other bytes"));
                    }
                }, 1 + (int) (next[0] % 7));
            }
            writer.join();
            assertThat(failure.get()).as("seed " + s).isNull();
            assertThat(ring.read((t, b, i, l) -> { }, 10)).as("seed " + s + ": nothing after the last").isZero();
            assertThat(ring.corrupt()).isFalse();
        }
    }

    @Test
    void aFullRingRefusesAMessageAndTakesItOnceTheReaderMadeRoom() {
        final SpscRing ring = ring(1024);
        final UnsafeBuffer src = new UnsafeBuffer(new byte[ring.maxMessageLength()]);
        int written = 0;
        while (ring.write(7, src, 0, ring.maxMessageLength())) {
            written++;
        }
        // 128-byte messages in 136-byte records, and the zero header word after the last: 7 fit in 1 KiB
        assertThat(written).isEqualTo(7);
        final List<Integer> types = new ArrayList<>();
        assertThat(ring.read((type, b, i, l) -> types.add(type), 1)).isEqualTo(1);
        // the 8th needs the 72 bytes to the end as padding, then its record from the start: room for it only once two are read
        assertThat(ring.write(8, src, 0, ring.maxMessageLength())).isFalse();
        assertThat(ring.read((type, b, i, l) -> types.add(type), 1)).isEqualTo(1);
        assertThat(ring.write(8, src, 0, ring.maxMessageLength())).isTrue();
        assertThat(ring.read((type, b, i, l) -> types.add(type), 100)).isEqualTo(6);
        assertThat(types).containsExactly(7, 7, 7, 7, 7, 7, 7, 8);
    }

    @Test
    void aReaderThatMeetsAForeignRecordStopsWithoutReadingOutsideTheRing() {
        final UnsafeBuffer raw = new UnsafeBuffer(ByteBuffer.allocateDirect(SpscRing.fileBytes(1024)));
        final SpscRing ring = new SpscRing(raw);
        ring.write(1, new UnsafeBuffer(new byte[16]), 0, 16);
        // a record claiming to run past the end of the ring
        raw.putInt(24 + 4, 1);
        raw.putInt(24, 5000);
        final int[] seen = {0};
        assertThat(ring.read((t, b, i, l) -> seen[0]++, 10)).isEqualTo(1);
        assertThat(ring.corrupt()).isTrue();
        assertThat(ring.read((t, b, i, l) -> seen[0]++, 10)).isZero();
        assertThat(seen[0]).isEqualTo(1);
    }

    @Test
    void aHandlerThatThrowsStillConsumesItsMessage() {
        final SpscRing ring = ring(1024);
        ring.write(1, new UnsafeBuffer(new byte[4]), 0, 4);
        ring.write(2, new UnsafeBuffer(new byte[4]), 0, 4);
        assertThatThrownBy(() -> ring.read((t, b, i, l) -> {
            throw new IllegalStateException("boom");
        }, 10)).hasMessage("boom");
        final List<Integer> types = new ArrayList<>();
        ring.read((type, b, i, l) -> types.add(type), 10);
        assertThat(types).containsExactly(2);
    }

    @Test
    void refusesOversizedMessagesAndBadSizes() {
        final SpscRing ring = ring(1024);
        assertThatThrownBy(() -> ring.write(1, new UnsafeBuffer(new byte[200]), 0, 200))
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("outside [0, 128]");
        assertThatThrownBy(() -> new SpscRing(new UnsafeBuffer(ByteBuffer.allocateDirect(1000 + SpscRing.TRAILER_LENGTH))))
            .hasMessageContaining("power of two");
    }
}
