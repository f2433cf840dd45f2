package io.serene.training.data;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import java.util.zip.ZipException;

/**
 * Fashion-MNIST (or any MNIST-shaped dataset) from gzip IDX files, as Debian's
 * {@code dataset-fashion-mnist} installs them: {@code train-images-idx3-ubyte.gz},
 * {@code train-labels-idx1-ubyte.gz}, {@code t10k-images-idx3-ubyte.gz}, {@code t10k-labels-idx1-ubyte.gz}.
 * Missing or corrupt files give a message naming the file and what is wrong.
 */
public final class FashionMnist {
    /** Where Debian's package puts the files. */
    public static final Path DEBIAN_DIR = Path.of("/usr/share/datasets/fashion-mnist");
    public static final String PACKAGE = "dataset-fashion-mnist";
    private static final int IMAGES_MAGIC = 0x00000803;
    private static final int LABELS_MAGIC = 0x00000801;

    /** Images (row-major bytes, rows x cols each) and their labels. */
    public static final class Split {
        public final byte[] pixels;
        public final byte[] labels;
        public final int rows;
        public final int cols;

        Split(final byte[] pixels, final byte[] labels, final int rows, final int cols) {
            this.pixels = pixels;
            this.labels = labels;
            this.rows = rows;
            this.cols = cols;
        }

        public int size() {
            return labels.length;
        }

        public int features() {
            return rows * cols;
        }

        /** Writes image i as floats in [0, 1] into dst at offset. */
        public void image(final int i, final float[] dst, final int offset) {
            final int n = features();
            for (int p = 0; p < n; p++) {
                dst[offset + p] = (pixels[i * n + p] & 0xFF) / 255f;
            }
        }

        public int label(final int i) {
            return labels[i];
        }

        /** Every image as floats in [0, 1], one after another (a test set to evaluate on). */
        public float[] allImages() {
            final float[] all = new float[size() * features()];
            for (int i = 0; i < size(); i++) {
                image(i, all, i * features());
            }
            return all;
        }

        /** Every label, in the images' order. */
        public int[] allLabels() {
            final int[] all = new int[size()];
            for (int i = 0; i < all.length; i++) {
                all[i] = label(i);
            }
            return all;
        }

        /**
         * This worker's disjoint shard: a seeded permutation of all indexes, cut into {@code workers}
         * nearly equal parts. Every worker computes the same permutation from the seed.
         */
        public int[] shard(final int worker, final int workers, final long seed) {
            if (worker < 0 || worker >= workers) {
                throw new IllegalArgumentException("worker " + worker + " is not in 0.." + (workers - 1));
            }
            final int n = size();
            final int[] order = new int[n];
            for (int i = 0; i < n; i++) {
                order[i] = i;
            }
            final SplittableRandom random = new SplittableRandom(seed);
            for (int i = n - 1; i > 0; i--) {
                final int k = random.nextInt(i + 1);
                final int t = order[i];
                order[i] = order[k];
                order[k] = t;
            }
            final int from = (int) ((long) n * worker / workers);
            final int to = (int) ((long) n * (worker + 1) / workers);
            return Arrays.copyOfRange(order, from, to);
        }
    }

    public final Split train;
    public final Split test;

    private FashionMnist(final Split train, final Split test) {
        this.train = train;
        this.test = test;
    }

    /** Loads the four files from a directory. */
    public static FashionMnist load(final Path dir) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException("no dataset directory " + dir + missingHint(dir));
        }
        return new FashionMnist(split(dir, "train"), split(dir, "t10k"));
    }

    private static String missingHint(final Path dir) {
        return dir.equals(DEBIAN_DIR)
            ? ": install Debian's package " + PACKAGE + " (apt-get install " + PACKAGE + "), or pass --data DIR"
            : ": pass --data with the directory holding train-images-idx3-ubyte.gz and the other three files";
    }

    private static Split split(final Path dir, final String prefix) {
        final Path images = dir.resolve(prefix + "-images-idx3-ubyte.gz");
        final Path labels = dir.resolve(prefix + "-labels-idx1-ubyte.gz");
        final int[] shape = new int[3];
        final byte[] pixels = read(images, IMAGES_MAGIC, shape, dir);
        final int[] labelShape = new int[1];
        final byte[] labelBytes = read(labels, LABELS_MAGIC, labelShape, dir);
        if (labelShape[0] != shape[0]) {
            throw new IllegalArgumentException(labels + " has " + labelShape[0] + " labels but " + images + " has "
                + shape[0] + " images");
        }
        for (final byte label : labelBytes) {
            if (label < 0 || label > 9) {
                throw new IllegalArgumentException(labels + " holds label " + label + ", outside 0..9");
            }
        }
        return new Split(pixels, labelBytes, shape[1], shape[2]);
    }

    /** Reads one gzip IDX file: its magic, dimensions (into shape) and data. */
    private static byte[] read(final Path file, final int magic, final int[] shape, final Path dir) {
        try (InputStream raw = Files.newInputStream(file);
             DataInputStream in = new DataInputStream(new GZIPInputStream(raw, 1 << 16))) {
            final int found = in.readInt();
            if (found != magic) {
                throw new IllegalArgumentException(file + " is not an IDX file of the expected kind (magic 0x"
                    + Integer.toHexString(found) + ", expected 0x" + Integer.toHexString(magic) + ")");
            }
            long size = 1;
            for (int d = 0; d < shape.length; d++) {
                shape[d] = in.readInt();
                if (shape[d] <= 0 || shape[d] > 10_000_000) {
                    throw new IllegalArgumentException(file + " has an implausible dimension " + shape[d]);
                }
                size *= shape[d];
            }
            if (size > Integer.MAX_VALUE - 16) {
                throw new IllegalArgumentException(file + " is too large (" + size + " bytes)");
            }
            final byte[] data = new byte[(int) size];
            in.readFully(data);
            return data;
        } catch (final NoSuchFileException ex) {
            throw new IllegalArgumentException("missing dataset file " + file + missingHint(dir));
        } catch (final EOFException ex) {
            throw new IllegalArgumentException(file + " is truncated (fewer bytes than its header announces)");
        } catch (final ZipException ex) {
            throw new IllegalArgumentException(file + " is not a valid gzip file: " + ex.getMessage());
        } catch (final IOException ex) {
            throw new IllegalArgumentException("cannot read " + file + ": " + ex.getMessage());
        }
    }

    /**
     * Writes a small, learnable synthetic dataset in the same format (for tests): each of the 10
     * classes lights a different band of pixels, plus seeded noise.
     */
    public static void writeSynthetic(final Path dir, final int trainSize, final int testSize, final long seed)
        throws IOException {
        Files.createDirectories(dir);
        final SplittableRandom random = new SplittableRandom(seed);
        writeSplit(dir, "train", trainSize, random);
        writeSplit(dir, "t10k", testSize, random);
    }

    private static void writeSplit(final Path dir, final String prefix, final int n, final SplittableRandom random)
        throws IOException {
        final int rows = 28;
        final int cols = 28;
        final byte[] pixels = new byte[n * rows * cols];
        final byte[] labels = new byte[n];
        for (int i = 0; i < n; i++) {
            final int label = random.nextInt(10);
            labels[i] = (byte) label;
            for (int p = 0; p < rows * cols; p++) {
                final int row = p / cols;
                final boolean band = row / 3 == label || (row / 3 == label + 1 && random.nextInt(4) == 0);
                final int value = (band ? 180 : 0) + random.nextInt(60);
                pixels[i * rows * cols + p] = (byte) Math.min(255, value);
            }
        }
        writeIdx(dir.resolve(prefix + "-images-idx3-ubyte.gz"), IMAGES_MAGIC, new int[] {n, rows, cols}, pixels);
        writeIdx(dir.resolve(prefix + "-labels-idx1-ubyte.gz"), LABELS_MAGIC, new int[] {n}, labels);
    }

    private static void writeIdx(final Path file, final int magic, final int[] shape, final byte[] data)
        throws IOException {
        try (DataOutputStream out = new DataOutputStream(
            new GZIPOutputStream(Files.newOutputStream(file)))) {
            out.writeInt(magic);
            for (final int d : shape) {
                out.writeInt(d);
            }
            out.write(data);
        }
    }
}
