package io.serene.protocol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.HexFormat;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A job's tag: the first 8 bytes of HMAC-SHA256(secret, "serene job tag" || job id), carried in every
 * packet of the job ({@link Packet#TAG_OFFSET}). Switch and workers derive it from the secret they
 * were given; a host without the secret cannot guess it (2^-64 a try), so it can neither change the
 * job's sums, clocks or membership nor be answered with its aggregates. An on-path attacker who sees
 * the tag can reuse it: that is out of scope, as for SCTP's verification tag (DESIGN.md 2a). 0 is the
 * tag of a job without a secret (no tag ever derives to 0).
 */
public final class JobTag {
    /** The tag of a job without a secret. */
    public static final long NONE = 0L;
    /** The environment variable a secret's text may come in (serene train sets it for its workers: not on the command line). */
    public static final String SECRET_ENV = "SERENE_SECRET";
    /** Fewest bytes a secret may have. */
    public static final int MIN_SECRET_BYTES = 16;
    private static final byte[] LABEL = "serene job tag".getBytes(StandardCharsets.US_ASCII);

    private JobTag() {
    }

    /** The tag of job {@code jobId} under {@code secret} (null: {@link #NONE}). */
    public static long of(final byte[] secret, final int jobId) {
        return secret == null ? NONE : new Tagger(secret).tag(jobId);
    }

    /** Tags of any job under one secret, computed without allocating (the switch's, for packets naming no job it has). */
    public static final class Tagger {
        private final Mac mac;
        private final byte[] id = new byte[4];
        private final byte[] out = new byte[32];
        private final ByteBuffer idView = ByteBuffer.wrap(id).order(ByteOrder.LITTLE_ENDIAN);
        private final ByteBuffer outView = ByteBuffer.wrap(out);

        public Tagger(final byte[] secret) {
            try {
                mac = Mac.getInstance("HmacSHA256");
                mac.init(new SecretKeySpec(secret, "HmacSHA256"));
            } catch (final GeneralSecurityException ex) {
                throw new IllegalStateException("HmacSHA256 is missing from this JVM", ex);
            }
        }

        public long tag(final int jobId) {
            idView.putInt(0, jobId);
            mac.update(LABEL);
            mac.update(id);
            try {
                mac.doFinal(out, 0);
            } catch (final GeneralSecurityException ex) {
                throw new IllegalStateException(ex);
            }
            final long tag = outView.getLong(0);
            return tag == NONE ? 1 : tag;
        }
    }

    /** A secret from its text (as a file or SERENE_SECRET holds it, surrounding white space ignored), checked. */
    public static byte[] secret(final String text, final String source) {
        final byte[] bytes = text.strip().getBytes(StandardCharsets.UTF_8);
        if (bytes.length < MIN_SECRET_BYTES) {
            throw new IllegalArgumentException(source + ": a job secret needs at least " + MIN_SECRET_BYTES + " bytes, this one has "
                + bytes.length);
        }
        return bytes;
    }

    /** A fresh random secret (32 bytes from SecureRandom, as 64 hex digits). */
    public static String newSecret() {
        final byte[] b = new byte[32];
        new SecureRandom().nextBytes(b);
        return HexFormat.of().formatHex(b);
    }
}
