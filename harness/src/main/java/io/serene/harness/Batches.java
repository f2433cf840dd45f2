package io.serene.harness;

import io.serene.training.DjlModel;

import java.util.SplittableRandom;

/**
 * A worker's batches: passes over its shard, each in a new seeded order (an epoch is one pass);
 * fills one reused pixel and label buffer.
 */
final class Batches {
    private final FashionMnist.Split split;
    private final int[] order;
    private final SplittableRandom random;
    private final float[] pixels;
    private final int[] labels;
    private int next;

    Batches(final FashionMnist.Split split, final int[] shard, final int batch, final long seed) {
        this.split = split;
        this.order = shard.clone();
        this.random = new SplittableRandom(seed);
        this.pixels = new float[batch * DjlModel.PIXELS];
        this.labels = new int[batch];
        shuffle();
    }

    /** The next batch's pixels (its labels in {@link #labels()}). */
    float[] next() {
        for (int b = 0; b < labels.length; b++) {
            if (next == order.length) {
                shuffle();
            }
            final int i = order[next++];
            split.image(i, pixels, b * DjlModel.PIXELS);
            labels[b] = split.label(i);
        }
        return pixels;
    }

    int[] labels() {
        return labels;
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
