package io.serene.protocol;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

class PacketTest {

    @Property
    void dataHeaderAndValuesRoundTrip(@ForAll final int job, @ForAll @IntRange(max = 65535) final int worker,
                                      @ForAll final long seq, @ForAll final int round, @ForAll final int chunk,
                                      @ForAll final byte exponent, @ForAll @IntRange(max = 1) final int set,
                                      @ForAll final int epoch, @ForAll @IntRange(max = 65535) final int pool,
                                      @ForAll @IntRange(max = 300) final int n, @ForAll final int value, @ForAll final long number,
                                      @ForAll final long mac) {
        final ByteBuffer buffer = Packet.allocate(DataPacket.length(n) + 8);
        final DataPacket data = new DataPacket();
        data.wrap(buffer, 8, DataPacket.length(n)).initHeader(PacketType.DATA)
            .flags(Flags.VALUES).elementCount(n).jobId(job).workerId(worker).seq(seq).round(round).chunk(chunk)
            .exponent(exponent).shadowSet(set).configEpoch(epoch).poolIndex(pool).packetNumber(number).mac(mac);
        for (int i = 0; i < n; i++) {
            data.value(i, value + i);
        }
        final DataPacket read = new DataPacket().wrap(buffer, 8, DataPacket.length(n));
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
        assertThat(read.packetNumber()).isEqualTo(number);
        assertThat(read.mac()).isEqualTo(mac);
        assertThat(read.elementCount()).isEqualTo(n);
        for (int i = 0; i < n; i++) {
            assertThat(read.value(i)).isEqualTo(value + i);
        }
    }

    @Property
    void resultBitmapAndValuesRoundTrip(@ForAll @IntRange(min = 1, max = 8) final int words,
                                        @ForAll @IntRange(max = 64) final int n, @ForAll final long bits,
                                        @ForAll final int count, @ForAll final int released) {
        final int length = ResultPacket.length(words, n);
        final ByteBuffer buffer = Packet.allocate(length);
        final ResultPacket flyweight = new ResultPacket();
        flyweight.wrap(buffer, 0, length).initHeader(PacketType.RESULT).elementCount(n).bitmapWords(words)
            .contributorCount(count).releasedRound(released);
        flyweight.openSeq(bits >>> 1);
        for (int w = 0; w < words; w++) {
            flyweight.bitmapWord(w, bits ^ w);
            flyweight.openBitmapWord(w, ~bits + w);
        }
        for (int i = 0; i < n; i++) {
            buffer.putInt(flyweight.valuesOffset() + 4 * i, i * 7 - 3);
        }
        final ResultPacket read = new ResultPacket().wrap(buffer, 0, length);
        assertThat(read.check()).isEqualTo(PacketCheck.OK);
        assertThat(read.contributorCount()).isEqualTo(count);
        assertThat(read.releasedRound()).isEqualTo(released);
        assertThat(read.openSeq()).isEqualTo(bits >>> 1);
        for (int w = 0; w < words; w++) {
            assertThat(read.bitmapWord(w)).isEqualTo(bits ^ w);
            assertThat(read.openBitmapWord(w)).isEqualTo(~bits + w);
        }
        for (int i = 0; i < n; i++) {
            assertThat(read.value(i)).isEqualTo(i * 7 - 3);
        }
    }

    @Test
    void shouldRejectTruncatedBadMagicBadVersionBadTypeAndWrongLength() {
        final ByteBuffer buffer = Packet.allocate(256);
        final DataPacket flyweight = new DataPacket();
        flyweight.wrap(buffer, 0, DataPacket.length(4)).initHeader(PacketType.DATA).elementCount(4);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.OK);
        assertThat(new PacketHeader().wrap(buffer, 0, 10).check()).isEqualTo(PacketCheck.TRUNCATED);
        assertThat(new PacketHeader().wrap(buffer, 0, DataPacket.length(3)).check())
            .isEqualTo(PacketCheck.TRUNCATED);
        assertThat(new PacketHeader().wrap(buffer, 0, DataPacket.length(5)).check())
            .isEqualTo(PacketCheck.BAD_LENGTH);
        buffer.put(Packet.TYPE_OFFSET, (byte) 99);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.BAD_TYPE);
        buffer.put(Packet.VERSION_OFFSET, (byte) 9);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.BAD_VERSION);
        buffer.putShort(Packet.MAGIC_OFFSET, (short) 0x1234);
        assertThat(flyweight.check()).isEqualTo(PacketCheck.BAD_MAGIC);
    }

    @Test
    void joinAckCarriesThePoolParameters() {
        final ByteBuffer buffer = Packet.allocate(JoinPacket.ACK_LENGTH);
        new JoinPacket().wrap(buffer, 0, JoinPacket.ACK_LENGTH).initHeader(PacketType.JOIN_ACK)
            .status(Status.OK.code()).workerCount(4).elementsPerRound(1000).poolSize(17)
            .chunkElements(256).roundRing(64).maxWorkers(64);
        final JoinPacket read = new JoinPacket().wrap(buffer, 0, JoinPacket.ACK_LENGTH);
        assertThat(read.check()).isEqualTo(PacketCheck.OK);
        assertThat(Status.fromCode(read.status())).isEqualTo(Status.OK);
        assertThat(read.workerCount()).isEqualTo(4);
        assertThat(read.elementsPerRound()).isEqualTo(1000);
        assertThat(read.poolSize()).isEqualTo(17);
        assertThat(read.chunkElements()).isEqualTo(256);
        assertThat(read.roundRing()).isEqualTo(64);
        assertThat(read.maxWorkers()).isEqualTo(64);
    }

    @Test
    void shouldWriteFieldsLittleEndianAtTheDocumentedOffsets() {
        final ByteBuffer buffer = Packet.allocate(Packet.HEADER_LENGTH);
        new PacketHeader().wrap(buffer, 0, Packet.HEADER_LENGTH).initHeader(PacketType.NACK).jobId(0x01020304);
        assertThat(buffer.get(Packet.MAGIC_OFFSET) & 0xFF).isEqualTo(0x45);
        assertThat(buffer.get(Packet.MAGIC_OFFSET + 1) & 0xFF).isEqualTo(0x53);
        assertThat(buffer.get(Packet.TYPE_OFFSET)).isEqualTo((byte) PacketType.NACK.code());
        assertThat(buffer.get(Packet.JOB_ID_OFFSET)).isEqualTo((byte) 4);
        assertThat(buffer.get(Packet.JOB_ID_OFFSET + 3)).isEqualTo((byte) 1);
        assertThat(Packet.PACKET_NUMBER_OFFSET).as("the packet number follows the status, 8-aligned").isEqualTo(Packet.STATUS_OFFSET + 2);
        assertThat(Packet.MAC_OFFSET).isEqualTo(Packet.PACKET_NUMBER_OFFSET + 8);
        assertThat(Packet.HEADER_LENGTH).as("the MAC ends the header").isEqualTo(Packet.MAC_OFFSET + 8);
    }

    @Property
    void configEntryRoundTrips(@ForAll @IntRange(min = 1, max = 8) final int words, @ForAll final int first,
                               @ForAll final int bound, @ForAll final int quorum, @ForAll final long timeout,
                               @ForAll final long bits) {
        final int length = ConfigPacket.length(words);
        final ByteBuffer buffer = Packet.allocate(length);
        final ConfigPacket config = new ConfigPacket().wrap(buffer, 0, length).initHeader(PacketType.CONFIG)
            .firstRound(first).bound(bound).quorum(quorum).lateMode(1).timeoutNs(timeout).bitmapWords(words);
        for (int w = 0; w < words; w++) {
            config.requiredWord(w, bits + w);
        }
        final ConfigPacket read = new ConfigPacket().wrap(buffer, 0, length);
        assertThat(read.check()).isEqualTo(PacketCheck.OK);
        assertThat(read.firstRound()).isEqualTo(first);
        assertThat(read.bound()).isEqualTo(bound);
        assertThat(read.quorum()).isEqualTo(quorum);
        assertThat(read.lateMode()).isEqualTo(1);
        assertThat(read.timeoutNs()).isEqualTo(timeout);
        for (int w = 0; w < words; w++) {
            assertThat(read.requiredWord(w)).isEqualTo(bits + w);
        }
    }

    @Test
    void shouldRejectABitmapCountNoPacketCanHave() {
        final ByteBuffer buffer = Packet.allocate(ResultPacket.length(1, 0));
        new ResultPacket().wrap(buffer, 0, ResultPacket.length(1, 0)).initHeader(PacketType.RESULT).bitmapWords(1);
        final PacketHeader header = new PacketHeader().wrap(buffer, 0, ResultPacket.length(1, 0));
        assertThat(header.check()).isEqualTo(PacketCheck.OK);
        buffer.putInt(ResultPacket.BITMAP_WORDS_OFFSET, Packet.MAX_BITMAP_WORDS + 1);
        assertThat(header.check()).isEqualTo(PacketCheck.BAD_LENGTH);
        buffer.putInt(ResultPacket.BITMAP_WORDS_OFFSET, -1);
        assertThat(header.check()).isEqualTo(PacketCheck.BAD_LENGTH);
        buffer.putInt(ResultPacket.BITMAP_WORDS_OFFSET, 2);
        assertThat(header.check()).isEqualTo(PacketCheck.TRUNCATED);
    }
}
