package io.serene.protocol;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

class PacketFlyweightTest {
    private final PacketFlyweight flyweight = new PacketFlyweight();

    @Property
    void dataHeaderAndValuesRoundTrip(@ForAll final int job, @ForAll @IntRange(max = 65535) final int worker,
                                      @ForAll final long seq, @ForAll final int round, @ForAll final int chunk,
                                      @ForAll final byte exponent, @ForAll @IntRange(max = 1) final int set,
                                      @ForAll final int epoch, @ForAll @IntRange(max = 65535) final int pool,
                                      @ForAll @IntRange(max = 300) final int n, @ForAll final int value) {
        final ByteBuffer buffer = PacketFlyweight.allocate(PacketFlyweight.dataLength(n) + 8);
        flyweight.wrap(buffer, 8, PacketFlyweight.dataLength(n)).initHeader(PacketType.DATA)
            .flags(Flags.VALUES).elementCount(n).jobId(job).workerId(worker).seq(seq).round(round).chunk(chunk)
            .exponent(exponent).shadowSet(set).configEpoch(epoch).poolIndex(pool);
        for (int i = 0; i < n; i++) {
            flyweight.dataValue(i, value + i);
        }
        final PacketFlyweight read = new PacketFlyweight().wrap(buffer, 8, PacketFlyweight.dataLength(n));
        assertThat(read.check()).isEqualTo(PacketCheck.OK);
        assertThat(read.type()).isEqualTo(PacketType.DATA);
        assertThat(read.hasFlag(Flags.VALUES)).isTrue();
        assertThat(read.jobId()).isEqualTo(job);
        assertThat(read.workerId()).isEqualTo(worker);
        assertThat(read.seq()).isEqualTo(seq);
        assertThat(read.round()).isEqualTo(round);
        assertThat(read.chunk()).isEqualTo(chunk);
        assertThat(read.exponent()).isEqualTo(exponent);
        assertThat(read.shadowSet()).isEqualTo(set);
        assertThat(read.configEpoch()).isEqualTo(epoch);
        assertThat(read.poolIndex()).isEqualTo(pool);
        assertThat(read.elementCount()).isEqualTo(n);
        for (int i = 0; i < n; i++) {
            assertThat(read.dataValue(i)).isEqualTo(value + i);
        }
    }

    @Property
    void resultBitmapAndValuesRoundTrip(@ForAll @IntRange(min = 1, max = 8) final int words,
                                        @ForAll @IntRange(max = 64) final int n, @ForAll final long bits,
                                        @ForAll final int count, @ForAll final int released) {
        final int length = PacketFlyweight.resultLength(words, n);
        final ByteBuffer buffer = PacketFlyweight.allocate(length);
        flyweight.wrap(buffer, 0, length).initHeader(PacketType.RESULT).elementCount(n).bitmapWords(words)
            .contributorCount(count).releasedRound(released);
        flyweight.openSeq(bits >>> 1);
        for (int w = 0; w < words; w++) {
            flyweight.bitmapWord(w, bits ^ w);
            flyweight.openBitmapWord(w, ~bits + w);
        }
        for (int i = 0; i < n; i++) {
            buffer.putInt(flyweight.resultValuesOffset() + 4 * i, i * 7 - 3);
        }
        final PacketFlyweight read = new PacketFlyweight().wrap(buffer, 0, length);
        assertThat(read.check()).isEqualTo(PacketCheck.OK);
        assertThat(read.contributorCount()).isEqualTo(count);
        assertThat(read.releasedRound()).isEqualTo(released);
        assertThat(read.openSeq()).isEqualTo(bits >>> 1);
        for (int w = 0; w < words; w++) {
            assertThat(read.bitmapWord(w)).isEqualTo(bits ^ w);
            assertThat(read.openBitmapWord(w)).isEqualTo(~bits + w);
        }
        for (int i = 0; i < n; i++) {
            assertThat(read.resultValue(i)).isEqualTo(i * 7 - 3);
        }
    }

    @Test
    void shouldRejectTruncatedBadMagicBadVersionBadTypeAndWrongLength() {
        final ByteBuffer buffer = PacketFlyweight.allocate(256);
        flyweight.wrap(buffer, 0, PacketFlyweight.dataLength(4)).initHeader(PacketType.DATA).elementCount(4);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.OK);
        assertThat(new PacketFlyweight().wrap(buffer, 0, 10).check()).isEqualTo(PacketCheck.TRUNCATED);
        assertThat(new PacketFlyweight().wrap(buffer, 0, PacketFlyweight.dataLength(3)).check())
            .isEqualTo(PacketCheck.TRUNCATED);
        assertThat(new PacketFlyweight().wrap(buffer, 0, PacketFlyweight.dataLength(5)).check())
            .isEqualTo(PacketCheck.BAD_LENGTH);
        buffer.put(PacketFlyweight.TYPE_OFFSET, (byte) 99);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.BAD_TYPE);
        buffer.put(PacketFlyweight.VERSION_OFFSET, (byte) 9);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.BAD_VERSION);
        buffer.putShort(PacketFlyweight.MAGIC_OFFSET, (short) 0x1234);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.BAD_MAGIC);
    }

    @Test
    void joinAckCarriesThePoolParameters() {
        final ByteBuffer buffer = PacketFlyweight.allocate(PacketFlyweight.JOIN_ACK_LENGTH);
        flyweight.wrap(buffer, 0, PacketFlyweight.JOIN_ACK_LENGTH).initHeader(PacketType.JOIN_ACK)
            .status(Status.OK.code()).joinWorkerCount(4).joinElementsPerRound(1000).ackPoolSize(17)
            .ackChunkElements(256).ackRoundRing(64).ackMaxWorkers(64);
        final PacketFlyweight read = new PacketFlyweight().wrap(buffer, 0, PacketFlyweight.JOIN_ACK_LENGTH);
        assertThat(read.check()).isEqualTo(PacketCheck.OK);
        assertThat(Status.fromCode(read.status())).isEqualTo(Status.OK);
        assertThat(read.joinWorkerCount()).isEqualTo(4);
        assertThat(read.joinElementsPerRound()).isEqualTo(1000);
        assertThat(read.ackPoolSize()).isEqualTo(17);
        assertThat(read.ackChunkElements()).isEqualTo(256);
        assertThat(read.ackRoundRing()).isEqualTo(64);
        assertThat(read.ackMaxWorkers()).isEqualTo(64);
    }

    @Test
    void shouldWriteFieldsLittleEndianAtTheDocumentedOffsets() {
        final ByteBuffer buffer = PacketFlyweight.allocate(PacketFlyweight.HEADER_LENGTH);
        flyweight.wrap(buffer, 0, PacketFlyweight.HEADER_LENGTH).initHeader(PacketType.NACK).jobId(0x01020304);
        assertThat(buffer.get(PacketFlyweight.MAGIC_OFFSET) & 0xFF).isEqualTo(0x45);
        assertThat(buffer.get(PacketFlyweight.MAGIC_OFFSET + 1) & 0xFF).isEqualTo(0x53);
        assertThat(buffer.get(PacketFlyweight.TYPE_OFFSET)).isEqualTo((byte) PacketType.NACK.code());
        assertThat(buffer.get(PacketFlyweight.JOB_ID_OFFSET)).isEqualTo((byte) 4);
        assertThat(buffer.get(PacketFlyweight.JOB_ID_OFFSET + 3)).isEqualTo((byte) 1);
    }
}
