package io.serene.training;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The DJL models on a tiny synthetic dataset: they learn, and equal aggregates give equal models. */
class DjlModelTest {
    /** Class c lights a 7x7 block at one of 10 places, with noise everywhere. */
    private static float[] images(final int[] labels, final long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final float[] pixels = new float[labels.length * DjlModel.PIXELS];
        for (int i = 0; i < labels.length; i++) {
            labels[i] = random.nextInt(DjlModel.CLASSES);
            final int row = (labels[i] / 5) * 14;
            final int col = (labels[i] % 5) * 5;
            for (int p = 0; p < DjlModel.PIXELS; p++) {
                pixels[i * DjlModel.PIXELS + p] = (float) (random.nextDouble() * 0.3);
            }
            for (int r = row; r < row + 7; r++) {
                for (int c = col; c < col + 3 && c < 28; c++) {
                    pixels[i * DjlModel.PIXELS + r * 28 + c] += 0.7f;
                }
            }
        }
        return pixels;
    }

    private static float[] slice(final float[] pixels, final int from, final int n) {
        final float[] part = new float[n * DjlModel.PIXELS];
        System.arraycopy(pixels, from * DjlModel.PIXELS, part, 0, part.length);
        return part;
    }

    private static int[] slice(final int[] labels, final int from, final int n) {
        final int[] part = new int[n];
        System.arraycopy(labels, from, part, 0, n);
        return part;
    }

    @Test
    void twoWorkersAveragingGradientsLearnAndEndBitwiseEqual() {
        final int batch = 32;
        final int[] trainLabels = new int[2 * 40 * batch];
        final float[] train = images(trainLabels, 1);
        final int[] testLabels = new int[500];
        final float[] test = images(testLabels, 2);
        try (DjlModel a = new DjlModel(ModelKind.MLP, batch, 0.05f, 0.9f, 7);
             DjlModel b = new DjlModel(ModelKind.MLP, batch, 0.05f, 0.9f, 7)) {
            assertThat(a.hash()).as("same seed, same initial model").isEqualTo(b.hash());
            assertThat(a.elements()).isEqualTo(784 * 128 + 128 + 128 * 10 + 10);
            final double before = a.accuracy(test, testLabels);
            float firstLoss = Float.NaN;
            for (int step = 0; step < 40; step++) {
                // disjoint shards: worker a takes even batches, worker b odd ones
                final float[] ga = a.computeGradient(slice(train, 2 * step * batch, batch), slice(trainLabels, 2 * step * batch, batch)).clone();
                final float[] gb = b.computeGradient(slice(train, (2 * step + 1) * batch, batch),
                    slice(trainLabels, (2 * step + 1) * batch, batch));
                if (step == 0) {
                    firstLoss = a.lastLoss();
                }
                final float[] avg = new float[ga.length];
                for (int i = 0; i < avg.length; i++) {
                    avg[i] = (ga[i] + gb[i]) / 2;
                }
                a.applyGradient(avg);
                b.applyGradient(avg);
            }
            assertThat(a.lastLoss()).as("loss falls").isLessThan(firstLoss / 2);
            final double after = a.accuracy(test, testLabels);
            assertThat(after).as("accuracy before %s", before).isGreaterThan(0.8);
            assertThat(a.hash()).as("invariant 7: equal aggregates, equal models").isEqualTo(b.hash());
        }
    }

    @Test
    void theCnnHasLeNetsParametersAndTakesAStep() {
        final int[] labels = new int[16];
        final float[] pixels = images(labels, 3);
        try (DjlModel cnn = new DjlModel(ModelKind.CNN, 16, 0.01f, 0.9f, 1)) {
            assertThat(cnn.elements()).isEqualTo(156 + 2416 + 48120 + 10164 + 850);
            final String before = cnn.hash();
            final float[] g = cnn.computeGradient(pixels, labels);
            assertThat(cnn.lastLoss()).isPositive();
            cnn.applyGradient(g.clone());
            assertThat(cnn.hash()).isNotEqualTo(before);
            assertThatThrownBy(() -> cnn.applyGradient(new float[3])).hasMessageContaining("3 elements");
        }
    }

    @Test
    void badModelNamesAndParametersAreClearErrors() {
        assertThat(ModelKind.parse("CNN")).isEqualTo(ModelKind.CNN);
        assertThatThrownBy(() -> ModelKind.parse("resnet")).hasMessage("unknown model 'resnet': expected mlp or cnn");
        assertThatThrownBy(() -> new DjlModel(ModelKind.MLP, 0, 0.1f, 0.9f, 1)).hasMessageContaining("batch size");
    }
}
