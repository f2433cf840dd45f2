package io.serene.protocol;

import java.nio.ByteBuffer;

/**
 * Per-packet authentication: every packet of a job with a secret carries a packet number and a
 * 64-bit MAC, SipHash-2-4 under a 128-bit key, over the packet's covered bytes. A worker's packets
 * go under its own key, the switch's under the job's reply key ({@link JobKeys}); the key names the
 * job and the worker, so their fields need no cover of their own.
 *
 * <p>What the MAC covers (the standard SipHash-2-4 of these ranges, concatenated):
 * <ul>
 *   <li>DATA: magic, version, type, flags, element count; seq; round and chunk; the packet number
 *       (bytes 0-7, 16-31, 40-47). Not the values, nor the look-ahead exponent, shadow set, pool
 *       index (checked against seq), the epoch the worker knows, nor its reported compute time: the
 *       switch could not afford a MAC over the values, and the others are hints of the same kind.</li>
 *   <li>RESULT: the same, and the config epoch, pool index and status (bytes 32-39), and the fixed
 *       fields after the header: contributor count, released round R, the open step (bytes 56-79);
 *       not the bitmaps, the agreed exponent or the sums.</li>
 *   <li>every other type: the whole header but the MAC, and the whole body.</li>
 * </ul>
 * SipHash was built for short inputs and has been run in switch pipelines (HalfSipHash on Tofino).
 *
 * <p>A MAC of 0 means "not signed" (a job without a secret); a real MAC that comes out 0 is sent
 * as 1, so a signed packet never looks unsigned.
 */
public final class PacketAuth {
    /** A packet's MAC when its job has no secret. */
    public static final long UNSIGNED = 0L;
    /** Header words (8 bytes each, word i at 8i) a DATA packet's MAC covers: 0, 2, 3 and 5. */
    static final int DATA_WORDS = 0b101101;
    /** Header words a RESULT's MAC covers: 0, 2, 3, 4 and 5. */
    static final int RESULT_WORDS = 0b111101;
    /** Header words every other type's MAC covers: all but the MAC's. */
    static final int ALL_WORDS = 0b111111;

    private PacketAuth() {
    }

    /** The header words (bit i: bytes 8i to 8i + 7) a packet's MAC covers. */
    public static int coveredWords(final Packet<?> packet) {
        final int code = packet.typeCode();
        return code == PacketType.DATA.code() ? DATA_WORDS : code == PacketType.RESULT.code() ? RESULT_WORDS : ALL_WORDS;
    }

    /** The bytes after the header a packet's MAC covers. */
    public static int coveredBody(final Packet<?> packet) {
        final int code = packet.typeCode();
        if (code == PacketType.DATA.code()) {
            return 0;
        }
        if (code == PacketType.RESULT.code()) {
            return ResultPacket.BITMAP_OFFSET - Packet.HEADER_LENGTH;
        }
        return packet.length() - Packet.HEADER_LENGTH;
    }

    /** The MAC of a packet (checked for length already) under key (k0, k1); never {@link #UNSIGNED}. */
    public static long mac(final long k0, final long k1, final Packet<?> packet) {
        final long mac = sipHash(k0, k1, packet.buffer(), packet.offset(), coveredWords(packet), coveredBody(packet));
        return mac == UNSIGNED ? 1 : mac;
    }

    /** Numbers and signs a composed packet under key (k0, k1). */
    public static void seal(final long k0, final long k1, final long number, final Packet<?> packet) {
        packet.packetNumber(number);
        packet.mac(mac(k0, k1, packet));
    }

    /** Whether a packet carries the MAC key (k0, k1) gives it. */
    public static boolean verify(final long k0, final long k1, final Packet<?> packet) {
        return packet.mac() == mac(k0, k1, packet);
    }

    /**
     * SipHash-2-4 of the header words in {@code words} (bit i: bytes 8i to 8i + 7, below the MAC field)
     * followed by {@code body} bytes from {@link Packet#HEADER_LENGTH}: the standard function of that
     * concatenation.
     */
    static long sipHash(final long k0, final long k1, final ByteBuffer b, final int offset, final int words, final int body) {
        long v0 = k0 ^ 0x736f6d6570736575L;
        long v1 = k1 ^ 0x646f72616e646f6dL;
        long v2 = k0 ^ 0x6c7967656e657261L;
        long v3 = k1 ^ 0x7465646279746573L;
        final int headerWords = Integer.bitCount(words);
        final int blocks = headerWords + (body >> 3);
        int pending = words;
        for (int k = 0; k <= blocks; k++) {
            final long m;
            if (k < headerWords) {
                m = b.getLong(offset + 8 * Integer.numberOfTrailingZeros(pending));
                pending &= pending - 1;
            } else if (k < blocks) {
                m = b.getLong(offset + Packet.HEADER_LENGTH + 8 * (k - headerWords));
            } else {
                m = lastBlock(b, offset + Packet.HEADER_LENGTH + (body & ~7), body & 7, 8 * headerWords + body);
            }
            v3 ^= m;
            for (int r = 0; r < 2; r++) {
                v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
                v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
                v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
                v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
            }
            v0 ^= m;
        }
        v2 ^= 0xFF;
        for (int r = 0; r < 4; r++) {
            v0 += v1; v1 = Long.rotateLeft(v1, 13); v1 ^= v0; v0 = Long.rotateLeft(v0, 32);
            v2 += v3; v3 = Long.rotateLeft(v3, 16); v3 ^= v2;
            v0 += v3; v3 = Long.rotateLeft(v3, 21); v3 ^= v0;
            v2 += v1; v1 = Long.rotateLeft(v1, 17); v1 ^= v2; v2 = Long.rotateLeft(v2, 32);
        }
        return v0 ^ v1 ^ v2 ^ v3;
    }

    /** SipHash's last block: the message length's low byte on top, the {@code tail} bytes left over below. */
    private static long lastBlock(final ByteBuffer b, final int at, final int tail, final int messageLength) {
        long last = ((long) messageLength & 0xFF) << 56;
        for (int i = 0; i < tail; i++) {
            last |= (b.get(at + i) & 0xFFL) << (8 * i);
        }
        return last;
    }
}
