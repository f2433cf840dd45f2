package io.serene.training.data;

import io.serene.training.DjlModel;

import java.util.SplittableRandom;

/**
 * A worker's batches: passes over its shard, each in a new seeded order (an epoch is one pass);
 * fills reused pixel and label buffers, one pair per batch size asked for (B to a maximum).
 */
public final class Batches {
    private final FashionMnist.Split split;
    private final int[] order;
    private final SplittableRandom random;
    private final int batch;
    private final float[][] pixelsBySize;
    private final int[][] labelsBySize;
    private int[] labels;
    private int next;
    /** Images drawn so far, over every pass: the data position a checkpoint keeps. */
    private long drawn;

    /**
     * Worker w's batches of a job of {@code workers} with training seed {@code seed}: its shard
     * ({@link FashionMnist.Split#shard}) in an order of its own, the same in every runner of a worker.
     */
    public static Batches ofWorker(final FashionMnist.Split train, final int w, final int workers, final int batch, final int maxBatch,
                                   final long seed) {
        return new Batches(train, train.shard(w, workers, seed), batch, maxBatch, seed * 31 + w);
    }

    /** Batches of {@code batch} to {@code maxBatch} images. */
    public Batches(final FashionMnist.Split split, final int[] shard, final int batch, final int maxBatch, final long seed) {
        if (batch <= 0 || maxBatch < batch) {
            throw new IllegalArgumentException("batch must be positive and at most maxBatch, were " + batch + " and " + maxBatch);
        }
        this.split = split;
        this.order = shard.clone();
        this.random = new SplittableRandom(seed);
        this.batch = batch;
        this.pixelsBySize = new float[maxBatch - batch + 1][];
        this.labelsBySize = new int[maxBatch - batch + 1][];
        shuffle();
    }

    /** The next batch of {@code size} images (B to the maximum): its pixels, labels in {@link #labels()}. */
    public float[] next(final int size) {
        if (size < batch || size - batch >= labelsBySize.length) {
            throw new IllegalArgumentException("batch size " + size + " outside " + batch + ".." + (batch + labelsBySize.length - 1));
        }
        final int k = size - batch;
        if (labelsBySize[k] == null) {
            pixelsBySize[k] = new float[size * DjlModel.PIXELS];
            labelsBySize[k] = new int[size];
        }
        final float[] pixels = pixelsBySize[k];
        labels = labelsBySize[k];
        for (int b = 0; b < size; b++) {
            final int i = draw();
            split.image(i, pixels, b * DjlModel.PIXELS);
            labels[b] = split.label(i);
        }
        return pixels;
    }

    /** The indexes (into the split) of the next batch of {@code size} images, drawn as {@link #next} draws them, into {@code into}. */
    public void nextIndexes(final int size, final int[] into) {
        for (int b = 0; b < size; b++) {
            into[b] = draw();
        }
    }

    /** The next image's index: the next of this pass, a new pass in a new order once one ends. */
    private int draw() {
        if (next == order.length) {
            shuffle();
        }
        drawn++;
        return order[next++];
    }

    public int[] labels() {
        return labels;
    }

    /** Images drawn so far (the data position). */
    public long drawn() {
        return drawn;
    }

    /**
     * Moves a fresh instance (same shard and seed) to where one that drew {@code images} images is:
     * the same passes in the same orders, without reading an image.
     */
    public void skipTo(final long images) {
        if (drawn != 0 || images < 0) {
            throw new IllegalStateException("skipTo needs a fresh instance and a position >= 0; drawn " + drawn + ", asked " + images);
        }
        for (long k = 0; k < images; k++) {
            if (next == order.length) {
                shuffle();
            }
            next++;
        }
        drawn = images;
    }

    private void shuffle() {
        for (int i = order.length - 1; i > 0; i--) {
            final int k = random.nextInt(i + 1);
            final int t = order[i];
            order[i] = order[k];
            order[k] = t;
        }
        next = 0;
    }
}
