package io.serene.training;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Locale;

/**
 * Deferred evaluations shared by the workers of one run on one host, through a directory: a model
 * several workers hold (every worker's, where the barrier keeps the models equal) is evaluated on
 * the test set by one of them, and the others read its accuracy. A model is named by its round and
 * a SHA-256 of its parameters, so only bit-identical models share an evaluation (the evaluation is
 * deterministic: the same parameters, the same accuracy). The first worker to create
 * {@code <round>-<hash>.claim} evaluates and publishes {@code <round>-<hash>.accuracy} (written
 * aside, then moved into place); a worker that finds a claim waits for the accuracy, and evaluates
 * the model itself if the claimer does not publish in time (it died, or hangs).
 */
public final class EvaluationShare {
    private static final long POLL_MS = 10;

    private final Path directory;

    /** A share in {@code directory}, created if missing. */
    public EvaluationShare(final Path directory) {
        try {
            Files.createDirectories(directory);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot create the evaluation share " + directory, ex);
        }
        this.directory = directory;
    }

    /** The name of a model held at {@code round} with these parameters. */
    public static String key(final int round, final float[] parameters) {
        try {
            final MessageDigest sha = MessageDigest.getInstance("SHA-256");
            final ByteBuffer b = ByteBuffer.allocate(4 * parameters.length).order(ByteOrder.LITTLE_ENDIAN);
            b.asFloatBuffer().put(parameters);
            sha.update(b);
            return round + "-" + HexFormat.of().formatHex(sha.digest(), 0, 16);
        } catch (final NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /** Whether this worker is the one to evaluate the model {@code key} names (it claimed it first). */
    public boolean claim(final String key) {
        try {
            Files.createFile(directory.resolve(key + ".claim"));
            return true;
        } catch (final FileAlreadyExistsException ex) {
            return false;
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot claim " + key + " in " + directory, ex);
        }
    }

    /** Publishes the accuracy of the model {@code key} names, for the workers waiting for it. */
    public void publish(final String key, final double accuracy) {
        final Path tmp = directory.resolve(key + ".accuracy.tmp");
        try {
            Files.writeString(tmp, Double.toString(accuracy), StandardCharsets.UTF_8);
            try {
                Files.move(tmp, directory.resolve(key + ".accuracy"), StandardCopyOption.ATOMIC_MOVE);
            } catch (final AtomicMoveNotSupportedException ex) {
                Files.move(tmp, directory.resolve(key + ".accuracy"), StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot publish the accuracy of " + key + " in " + directory, ex);
        }
    }

    /** The accuracy published for {@code key}, waiting up to {@code patienceMs}; NaN if none came by then. */
    public double await(final String key, final long patienceMs) throws InterruptedException {
        final Path file = directory.resolve(key + ".accuracy");
        final long deadline = System.nanoTime() + patienceMs * 1_000_000;
        while (true) {
            try {
                return Double.parseDouble(Files.readString(file, StandardCharsets.UTF_8).trim());
            } catch (final NoSuchFileException ex) {
                if (System.nanoTime() >= deadline) {
                    return Double.NaN;
                }
                Thread.sleep(POLL_MS);
            } catch (final IOException | NumberFormatException ex) {
                throw new IllegalStateException(String.format(Locale.ROOT, "unreadable accuracy for %s in %s", key, directory), ex);
            }
        }
    }
}
