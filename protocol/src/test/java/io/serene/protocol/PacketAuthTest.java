package io.serene.protocol;

import com.google.common.hash.Hashing;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PacketAuthTest {
    /** The reference key of the SipHash paper (Aumasson and Bernstein 2012, appendix A): bytes 00..0f. */
    private static final long K0 = 0x0706050403020100L;
    private static final long K1 = 0x0f0e0d0c0b0a0908L;

    @Test
    void isSipHash24OfTheHeaderWithoutItsMacThenTheBody() {
        // the reference: Guava's SipHash-2-4, anchored on the paper's own example (message 00..0e)
        final byte[] example = new byte[15];
        for (int i = 0; i < example.length; i++) {
            example[i] = (byte) i;
        }
        assertThat(Hashing.sipHash24(K0, K1).hashBytes(example).padToLong()).isEqualTo(0xa129ca6149be45e5L);
        for (int n = Packet.MAC_OFFSET; n < Packet.MAC_OFFSET + 40; n++) {
            final byte[] message = new byte[n];
            final ByteBuffer b = Packet.allocate(Packet.HEADER_LENGTH + 40);
            for (int i = 0; i < n; i++) {
                message[i] = (byte) (i * 37 + 5);
                b.put(i < Packet.MAC_OFFSET ? i : i + 8, message[i]);
            }
            assertThat(PacketAuth.sipHash(K0, K1, b, 0, PacketAuth.ALL_WORDS, n - Packet.MAC_OFFSET)).as(n + " bytes")
                .isEqualTo(Hashing.sipHash24(K0, K1).hashBytes(message).padToLong());
        }
        // a DATA packet's cover: header words 0, 2, 3 and 5, concatenated
        final ByteBuffer b = Packet.allocate(Packet.HEADER_LENGTH);
        final byte[] data = new byte[32];
        for (int i = 0; i < Packet.MAC_OFFSET; i++) {
            b.put(i, (byte) (i * 11 + 3));
        }
        final int[] words = {0, 2, 3, 5};
        for (int k = 0; k < words.length; k++) {
            for (int i = 0; i < 8; i++) {
                data[8 * k + i] = b.get(8 * words[k] + i);
            }
        }
        assertThat(PacketAuth.sipHash(K0, K1, b, 0, PacketAuth.DATA_WORDS, 0))
            .isEqualTo(Hashing.sipHash24(K0, K1).hashBytes(data).padToLong());
    }

    @Property
    void aSealedPacketVerifiesAndAnyChangedCoveredByteFailsIt(@ForAll @IntRange(max = 7) final int type,
                                                              @ForAll @IntRange(max = 200) final int at, @ForAll final long k0) {
        final PacketType[] types = {PacketType.DATA, PacketType.RESULT, PacketType.JOIN, PacketType.JOIN_ACK, PacketType.NACK,
            PacketType.LEAVE, PacketType.CONFIG_REQUEST, PacketType.CONFIG};
        final PacketType t = types[type % types.length];
        final int length = t == PacketType.DATA ? DataPacket.length(32) : t == PacketType.RESULT ? ResultPacket.length(1, 32)
            : t == PacketType.JOIN ? JoinPacket.LENGTH : t == PacketType.JOIN_ACK ? JoinPacket.ACK_LENGTH
            : t == PacketType.CONFIG ? ConfigPacket.length(1) : Packet.HEADER_LENGTH;
        final ByteBuffer b = Packet.allocate(length);
        final PacketHeader p = new PacketHeader().wrap(b, 0, length).initHeader(t).jobId(7).workerId(3).seq(11).round(2);
        for (int i = Packet.HEADER_LENGTH; i < length; i++) {
            b.put(i, (byte) (i * 7));
        }
        PacketAuth.seal(k0, 42, 1234, p);
        assertThat(PacketAuth.verify(k0, 42, p)).isTrue();
        assertThat(PacketAuth.verify(k0, 43, p)).as("another key").isFalse();
        final int i = at % length;
        if (i >= Packet.MAC_OFFSET && i < Packet.HEADER_LENGTH) {
            return;
        }
        final boolean covered = i < Packet.HEADER_LENGTH ? (PacketAuth.coveredWords(p) & (1 << (i >> 3))) != 0
            : i < Packet.HEADER_LENGTH + PacketAuth.coveredBody(p);
        final boolean keyed = i >= Packet.JOB_ID_OFFSET && i < Packet.EXPONENT_OFFSET;
        b.put(i, (byte) (b.get(i) ^ 1));
        if (keyed && !covered) {
            // job and worker are not covered in DATA and RESULT: the key they name is, so the receiver checks under another key
            return;
        }
        assertThat(PacketAuth.verify(k0, 42, p)).as("byte " + i + " of a " + t + " changed").isEqualTo(!covered);
    }

    @Test
    void aDataPacketsValuesAreNotCoveredButEveryControlPacketsBodyIs() {
        final ByteBuffer b = Packet.allocate(DataPacket.length(4));
        assertThat(PacketAuth.coveredBody(new PacketHeader().wrap(b, 0, DataPacket.length(4)).initHeader(PacketType.DATA))).isZero();
        final ByteBuffer j = Packet.allocate(JoinPacket.LENGTH);
        assertThat(PacketAuth.coveredBody(new PacketHeader().wrap(j, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN)))
            .as("JOIN: offers and incarnation").isEqualTo(JoinPacket.LENGTH - Packet.HEADER_LENGTH);
    }

    @Test
    void keysDifferByJobAndWorkerAndEachCredentialGivesOnlyWhatItHolds() {
        final byte[] secret = "0123456789abcdef0123".getBytes(StandardCharsets.UTF_8);
        final JobKeys.Credential switchSecret = JobKeys.credential(new String(secret, StandardCharsets.UTF_8), "test");
        final JobKeys.WorkerKey a = switchSecret.keyOf(1, 0);
        assertThat(switchSecret.keyOf(1, 0)).isEqualTo(a);
        assertThat(switchSecret.keyOf(1, 1).k0()).isNotEqualTo(a.k0());
        assertThat(switchSecret.keyOf(1, 1).r0()).as("one reply key a job").isEqualTo(a.r0());
        assertThat(switchSecret.keyOf(2, 0).k0()).isNotEqualTo(a.k0());
        assertThat(switchSecret.keyOf(2, 0).r0()).isNotEqualTo(a.r0());

        final JobKeys.JobSecret job = new JobKeys.JobSecret(1, JobKeys.jobSecret(secret, 1), "test");
        final JobKeys.Credential parsedJob = JobKeys.credential(job.text(), "job file");
        assertThat(parsedJob.keyOf(1, 1)).isEqualTo(switchSecret.keyOf(1, 1));
        assertThatThrownBy(() -> parsedJob.keyOf(2, 0)).hasMessageContaining("job file").hasMessageContaining("not of job 2");

        final JobKeys.Credential parsedKey = JobKeys.credential(a.text(), "key file");
        assertThat(parsedKey.keyOf(1, 0)).isEqualTo(a);
        assertThatThrownBy(() -> parsedKey.keyOf(1, 1)).hasMessageContaining("not of worker 1 of job 1");
        assertThatThrownBy(() -> JobKeys.credential(JobKeys.WORKER_KEY_PREFIX + " 1 0 abc", "bad"))
            .hasMessageContaining("bad: not a valid " + JobKeys.WORKER_KEY_PREFIX);
        assertThatThrownBy(() -> JobKeys.credential("short", "env")).hasMessageContaining("at least 16 bytes");
    }

    @Test
    void aReplayWindowTakesEachNumberOnceAndNothingTooOld() {
        final long[] highest = new long[2];
        final long[] seen = new long[2 * ReplayWindow.WORDS];
        assertThat(ReplayWindow.take(highest, seen, 1, 1_000)).isTrue();
        assertThat(ReplayWindow.take(highest, seen, 1, 1_000)).as("a replay").isFalse();
        assertThat(ReplayWindow.take(highest, seen, 1, 990)).as("reordered, within the span").isTrue();
        assertThat(ReplayWindow.take(highest, seen, 1, 990)).isFalse();
        assertThat(ReplayWindow.take(highest, seen, 0, 990)).as("another peer's window").isTrue();
        assertThat(ReplayWindow.take(highest, seen, 1, 1_000 - ReplayWindow.SPAN)).as("too old").isFalse();
        assertThat(ReplayWindow.take(highest, seen, 1, 1_300)).isTrue();
        assertThat(ReplayWindow.take(highest, seen, 1, 1_299)).as("in the words the window moved into").isTrue();
        assertThat(ReplayWindow.take(highest, seen, 1, 1_000)).as("now beyond the span").isFalse();
        ReplayWindow.reset(highest, seen, 1);
        assertThat(ReplayWindow.take(highest, seen, 1, 5)).isTrue();
    }

    @Property
    void aWindowStartedAtNTakesWhatComesAfterItAndNothingBefore(@ForAll @IntRange(min = 200, max = 1_000) final int n,
                                                               @ForAll @IntRange(min = 1, max = 300) final int later) {
        final long[] highest = new long[1];
        final long[] seen = new long[ReplayWindow.WORDS];
        ReplayWindow.startAt(highest, seen, 0, n);
        assertThat(ReplayWindow.take(highest, seen, 0, n)).isFalse();
        assertThat(ReplayWindow.take(highest, seen, 0, n - 1 - later % 190)).as("before the start").isFalse();
        assertThat(ReplayWindow.take(highest, seen, 0, n + 1)).as("the next one, in the same word or not").isTrue();
        assertThat(ReplayWindow.take(highest, seen, 0, n + 1 + later)).isTrue();
        assertThat(ReplayWindow.take(highest, seen, 0, n - 1 - later % 190)).as("still before the start").isFalse();
    }

    @Property
    void aReplayWindowTakesAnyNumberAtMostOnce(@ForAll("numbers") final long[] numbers) {
        final long[] highest = new long[1];
        final long[] seen = new long[ReplayWindow.WORDS];
        final java.util.Set<Long> taken = new java.util.HashSet<>();
        long max = 0;
        for (final long n : numbers) {
            final boolean took = ReplayWindow.take(highest, seen, 0, n);
            if (took) {
                assertThat(taken.add(n)).as("number " + n + " taken twice").isTrue();
            } else {
                assertThat(taken.contains(n) || n <= max - ReplayWindow.SPAN).as("number " + n + " refused").isTrue();
            }
            max = Math.max(max, n);
        }
    }

    @net.jqwik.api.Provide
    net.jqwik.api.Arbitrary<long[]> numbers() {
        return net.jqwik.api.Arbitraries.longs().between(1, 2_000).array(long[].class).ofMaxSize(300);
    }
}
