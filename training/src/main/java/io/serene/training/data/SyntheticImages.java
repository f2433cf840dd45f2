package io.serene.training.data;

import io.serene.training.DjlModel;

import java.util.SplittableRandom;

/**
 * A tiny learnable stand-in for Fashion-MNIST, for tests: class c lights a 7x3 bar at one of 10
 * places of a 28x28 image, with uniform noise everywhere. Seeded.
 */
public final class SyntheticImages {
    public final float[] pixels;
    public final int[] labels;

    public SyntheticImages(final int count, final long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        labels = new int[count];
        pixels = new float[count * DjlModel.PIXELS];
        for (int i = 0; i < count; i++) {
            labels[i] = random.nextInt(DjlModel.CLASSES);
            final int row = (labels[i] / 5) * 14;
            final int col = (labels[i] % 5) * 5;
            for (int p = 0; p < DjlModel.PIXELS; p++) {
                pixels[i * DjlModel.PIXELS + p] = (float) (random.nextDouble() * 0.3);
            }
            for (int r = row; r < row + 7; r++) {
                for (int c = col; c < col + 3; c++) {
                    pixels[i * DjlModel.PIXELS + r * 28 + c] += 0.7f;
                }
            }
        }
    }

    /** Images {@code from .. from + n - 1}. */
    public float[] pixels(final int from, final int n) {
        final float[] part = new float[n * DjlModel.PIXELS];
        System.arraycopy(pixels, from * DjlModel.PIXELS, part, 0, part.length);
        return part;
    }

    /** Labels {@code from .. from + n - 1}. */
    public int[] labels(final int from, final int n) {
        final int[] part = new int[n];
        System.arraycopy(labels, from, part, 0, n);
        return part;
    }
}
