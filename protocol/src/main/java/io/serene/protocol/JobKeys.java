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
 * The keys that sign a job's packets ({@link PacketAuth}), derived with HMAC-SHA256 down one tree:
 *
 * <pre>
 *   switch secret S                                  (the switch's --secret-file)
 *     job secret    J = HMAC(S, "serene job secret" || job)      one a job, also on a shared switch
 *       worker key  K = HMAC(J, "serene worker key" || worker)   signs that worker's packets
 *       reply key   R = HMAC(J, "serene reply key")              signs the switch's packets to the job
 * </pre>
 *
 * (job and worker as 4 little-endian bytes; a key is the first 16 bytes of its HMAC.) The switch
 * holds S and derives the rest; a job's launcher holds S or J; a worker needs only its own
 * {@link WorkerKey}: K to sign with and R to check the switch's packets. So a worker cannot sign as
 * another worker, and one tenant of a shared switch, holding its J, cannot sign for another's job.
 */
public final class JobKeys {
    /** The environment variable a credential's text may come in (serene train sets it for its workers: not on the command line). */
    public static final String SECRET_ENV = "SERENE_SECRET";
    /** Fewest bytes a secret may have. */
    public static final int MIN_SECRET_BYTES = 16;
    /** How a job secret's text starts (then the job id and 64 hex digits). */
    public static final String JOB_SECRET_PREFIX = "serene-job-secret";
    /** How a worker key's text starts (then the job id, the worker id and 64 hex digits). */
    public static final String WORKER_KEY_PREFIX = "serene-worker-key";
    private static final byte[] JOB_LABEL = "serene job secret".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] WORKER_LABEL = "serene worker key".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] REPLY_LABEL = "serene reply key".getBytes(StandardCharsets.US_ASCII);

    private JobKeys() {
    }

    /** The signing keys of one worker of one job: K (k0, k1) for its packets, R (r0, r1) for the switch's to it. */
    public record WorkerKey(int job, int worker, long k0, long k1, long r0, long r1) {
        /** The key's text, as a credential file or {@value #SECRET_ENV} holds it. */
        public String text() {
            final ByteBuffer b = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN).putLong(k0).putLong(k1).putLong(r0).putLong(r1);
            return WORKER_KEY_PREFIX + " " + job + " " + worker + " " + HexFormat.of().formatHex(b.array());
        }

        @Override
        public String toString() {
            return "WorkerKey[job=" + job + ", worker=" + worker + "]";
        }
    }

    /** The secret of job {@code job} under the switch's secret {@code switchSecret}. */
    public static byte[] jobSecret(final byte[] switchSecret, final int job) {
        return hmac(switchSecret, JOB_LABEL, littleEndian(job));
    }

    /** The key of worker {@code worker} of job {@code job}, from the job's secret. */
    public static WorkerKey workerKey(final byte[] jobSecret, final int job, final int worker) {
        final long[] k = ownKey(jobSecret, worker);
        final long[] r = replyKey(jobSecret);
        return new WorkerKey(job, worker, k[0], k[1], r[0], r[1]);
    }

    /** K, the key worker {@code worker} signs with, from its job's secret: {k0, k1}. */
    public static long[] ownKey(final byte[] jobSecret, final int worker) {
        return key(jobSecret, WORKER_LABEL, littleEndian(worker));
    }

    /** R, the key the switch signs its packets to the job with, from the job's secret: {r0, r1}. */
    public static long[] replyKey(final byte[] jobSecret) {
        return key(jobSecret, REPLY_LABEL, new byte[0]);
    }

    /** The first 16 bytes of HMAC-SHA256(secret, label || suffix), as two little-endian longs. */
    private static long[] key(final byte[] secret, final byte[] label, final byte[] suffix) {
        final ByteBuffer b = ByteBuffer.wrap(hmac(secret, label, suffix)).order(ByteOrder.LITTLE_ENDIAN);
        return new long[] {b.getLong(0), b.getLong(8)};
    }

    private static byte[] littleEndian(final int value) {
        return ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(value).array();
    }

    /** HMAC-SHA256(key, label || suffix). */
    private static byte[] hmac(final byte[] key, final byte[] label, final byte[] suffix) {
        try {
            final Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            mac.update(label);
            mac.update(suffix);
            return mac.doFinal();
        } catch (final GeneralSecurityException ex) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", ex);
        }
    }

    /**
     * What a credential's text gives: a worker key (its own text), a job secret ({@value #JOB_SECRET_PREFIX}
     * JOB HEX) or else a switch secret (any text of at least {@value #MIN_SECRET_BYTES} bytes, surrounding
     * white space ignored). {@code source} names where the text came from, for errors.
     */
    public sealed interface Credential permits SwitchSecret, JobSecret, WorkerKeyCredential {
        /** The key of worker {@code worker} of job {@code job}; an error naming {@code source} if this credential cannot give it. */
        WorkerKey keyOf(int job, int worker);
    }

    /** A switch's secret: gives every key of every job. */
    public record SwitchSecret(byte[] secret) implements Credential {
        @Override
        public WorkerKey keyOf(final int job, final int worker) {
            return workerKey(jobSecret(secret, job), job, worker);
        }
    }

    /** One job's secret: gives the keys of that job's workers. */
    public record JobSecret(int job, byte[] secret, String source) implements Credential {
        @Override
        public WorkerKey keyOf(final int forJob, final int worker) {
            if (forJob != job) {
                throw new IllegalArgumentException(source + ": holds the secret of job " + job + ", not of job " + forJob);
            }
            return workerKey(secret, job, worker);
        }

        /** The text a job secret is handed out as. */
        public String text() {
            return JOB_SECRET_PREFIX + " " + job + " " + HexFormat.of().formatHex(secret);
        }
    }

    /** One worker's key: gives only itself. */
    public record WorkerKeyCredential(WorkerKey key, String source) implements Credential {
        @Override
        public WorkerKey keyOf(final int job, final int worker) {
            if (job != key.job() || worker != key.worker()) {
                throw new IllegalArgumentException(source + ": holds the key of worker " + key.worker() + " of job " + key.job()
                    + ", not of worker " + worker + " of job " + job);
            }
            return key;
        }
    }

    /** A credential from its text, checked. */
    public static Credential credential(final String text, final String source) {
        final String t = text.strip();
        final String[] parts = t.split("\\s+");
        try {
            if (parts[0].equals(WORKER_KEY_PREFIX)) {
                if (parts.length != 4 || parts[3].length() != 64) {
                    throw new IllegalArgumentException("expected '" + WORKER_KEY_PREFIX + " JOB WORKER' and 64 hex digits");
                }
                final ByteBuffer b = ByteBuffer.wrap(HexFormat.of().parseHex(parts[3])).order(ByteOrder.LITTLE_ENDIAN);
                return new WorkerKeyCredential(new WorkerKey(Integer.parseInt(parts[1]), Integer.parseInt(parts[2]), b.getLong(0),
                    b.getLong(8), b.getLong(16), b.getLong(24)), source);
            }
            if (parts[0].equals(JOB_SECRET_PREFIX)) {
                if (parts.length != 3 || parts[2].length() != 64) {
                    throw new IllegalArgumentException("expected '" + JOB_SECRET_PREFIX + " JOB' and 64 hex digits");
                }
                return new JobSecret(Integer.parseInt(parts[1]), HexFormat.of().parseHex(parts[2]), source);
            }
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException(source + ": not a valid " + parts[0] + " (" + ex.getMessage() + ")", ex);
        }
        return new SwitchSecret(secret(t, source));
    }

    /** A switch secret from its text (surrounding white space ignored), checked. */
    public static byte[] secret(final String text, final String source) {
        final byte[] bytes = text.strip().getBytes(StandardCharsets.UTF_8);
        if (bytes.length < MIN_SECRET_BYTES) {
            throw new IllegalArgumentException(source + ": a secret needs at least " + MIN_SECRET_BYTES + " bytes, this one has "
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
