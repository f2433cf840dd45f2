package io.serene.training;

import io.serene.training.data.SyntheticImages;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

/** The DJL models on a tiny synthetic dataset: they learn, and equal aggregates give equal models. */
class DjlModelTest {
    @Test
    void twoWorkersAveragingGradientsLearnAndEndBitwiseEqual() {
        final int batch = 32;
        final SyntheticImages train = new SyntheticImages(2 * 40 * batch, 1);
        final SyntheticImages test = new SyntheticImages(500, 2);
        try (DjlModel a = new DjlModel(ModelKind.MLP, batch, 0.05f, 0.9f, 7);
             DjlModel b = new DjlModel(ModelKind.MLP, batch, 0.05f, 0.9f, 7)) {
            assertThat(a.hash()).as("same seed, same initial model").isEqualTo(b.hash());
            assertThat(a.elements()).isEqualTo(784 * 128 + 128 + 128 * 10 + 10);
            final double before = a.accuracy(test.pixels, test.labels);
            float firstLoss = Float.NaN;
            for (int step = 0; step < 40; step++) {
                // disjoint shards: worker a takes even batches, worker b odd ones
                final float[] ga = a.computeGradient(train.pixels(2 * step * batch, batch), train.labels(2 * step * batch, batch)).clone();
                final float[] gb = b.computeGradient(train.pixels((2 * step + 1) * batch, batch),
                    train.labels((2 * step + 1) * batch, batch));
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
            final double after = a.accuracy(test.pixels, test.labels);
            assertThat(after).as("accuracy before %s", before).isGreaterThan(0.8);
            assertThat(a.hash()).as("invariant 7: equal aggregates, equal models").isEqualTo(b.hash());
        }
    }

    @Test
    void aStepIsWMinusLrTimesTheVelocityInFloatAndThePyTorchTensorsComputeOnIt() {
        final SyntheticImages data = new SyntheticImages(64, 5);
        try (DjlModel m = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 11);
             DjlModel check = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 12)) {
            final float[] w0 = new float[m.elements()];
            m.copyParameters(w0);
            final float[] g1 = m.computeGradient(data.pixels(0, 32), data.labels(0, 32)).clone();
            m.applyGradient(g1);
            final float[] g2 = m.computeGradient(data.pixels(32, 32), data.labels(32, 32)).clone();
            m.applyGradient(g2, 0.5f);
            final float[] w2 = new float[m.elements()];
            m.copyParameters(w2);
            for (int i = 0; i < w0.length; i++) {
                final float v1 = g1[i];
                final float v2 = 0.5f * v1 + g2[i];
                final float expected = (w0[i] - 0.05f * v1) - 0.05f * v2;
                assertThat(Float.floatToRawIntBits(w2[i])).as("element %d", i).isEqualTo(Float.floatToRawIntBits(expected));
            }
            // the step is in the tensors PyTorch computes on, not only in the flat copy
            check.loadParameters(w2);
            assertThat(check.hash()).isEqualTo(m.hash());
            assertThat(m.computeGradient(data.pixels(0, 32), data.labels(0, 32)))
                .isEqualTo(check.computeGradient(data.pixels(0, 32), data.labels(0, 32)));
        }
    }

    @Test
    void gradientsOfConsecutiveBatchesDoNotAccumulateWithoutAStep() {
        // SSP computes several gradients before it applies an aggregate: each must stand alone
        final SyntheticImages data = new SyntheticImages(64, 4);
        try (DjlModel m = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 3)) {
            final float[] first = m.computeGradient(data.pixels(0, 32), data.labels(0, 32)).clone();
            m.computeGradient(data.pixels(32, 32), data.labels(32, 32));
            final float[] again = m.computeGradient(data.pixels(0, 32), data.labels(0, 32)).clone();
            assertThat(again).isEqualTo(first);
        }
    }

    @Test
    void anAggregateAppliedBeforeTheFirstGradientTakesEffectEvenIfItSumsToZero() {
        // a worker whose first rounds were released without it applies aggregates before it ever computed
        try (DjlModel a = new DjlModel(ModelKind.MLP, 8, 0.05f, 0.9f, 5);
             DjlModel b = new DjlModel(ModelKind.MLP, 8, 0.05f, 0.9f, 5)) {
            final float[] g = new float[a.elements()];
            g[0] = 1f;
            g[1] = -1f;   // sums to exactly 0: DJL's first-step check would refuse it
            final String before = a.hash();
            a.applyGradient(g);
            assertThat(a.hash()).isNotEqualTo(before);
            // the same step after a gradient was computed gives the same model
            final SyntheticImages data = new SyntheticImages(8, 6);
            b.computeGradient(data.pixels, data.labels);
            b.applyGradient(g);
            assertThat(b.hash()).isEqualTo(a.hash());
        }
    }

    @Test
    void theCnnHasLeNetsParametersAndTakesAStep() {
        final SyntheticImages data = new SyntheticImages(16, 3);
        try (DjlModel cnn = new DjlModel(ModelKind.CNN, 16, 0.01f, 0.9f, 1)) {
            assertThat(cnn.elements()).isEqualTo(156 + 2416 + 48120 + 10164 + 850);
            final String before = cnn.hash();
            final float[] g = cnn.computeGradient(data.pixels, data.labels);
            assertThat(cnn.lastLoss()).isPositive();
            cnn.applyGradient(g.clone());
            assertThat(cnn.hash()).isNotEqualTo(before);
            assertThatThrownBy(() -> cnn.applyGradient(new float[3])).hasMessageContaining("3 elements");
        }
    }

    @Test
    void aCopyOfTheParametersLoadsBackBitwiseEvenOverNaNAndTrainingGoesOnFromIt() {
        // deferred evaluation: a worker copies its model at an evaluation round and evaluates the copy after training
        final SyntheticImages data = new SyntheticImages(64, 8);
        final SyntheticImages test = new SyntheticImages(200, 9);
        try (DjlModel a = new DjlModel(ModelKind.CNN, 32, 0.01f, 0.9f, 4);
             DjlModel b = new DjlModel(ModelKind.CNN, 32, 0.01f, 0.9f, 4)) {
            a.applyGradient(a.computeGradient(data.pixels(0, 32), data.labels(0, 32)).clone());
            final float[] copy = new float[a.elements()];
            a.copyParameters(copy);
            final String hash = a.hash();
            final double accuracy = a.accuracy(test.pixels, test.labels);
            a.applyGradient(a.computeGradient(data.pixels(32, 32), data.labels(32, 32)).clone());
            assertThat(a.hash()).isNotEqualTo(hash);
            a.loadParameters(copy);
            assertThat(a.hash()).isEqualTo(hash);
            assertThat(a.accuracy(test.pixels, test.labels)).isEqualTo(accuracy);
            final float[] nan = new float[a.elements()];
            Arrays.fill(nan, Float.NaN);
            a.loadParameters(nan);
            assertThat(a.hash()).isNotEqualTo(hash);
            a.loadParameters(copy);
            assertThat(a.hash()).as("overwritten, not added to").isEqualTo(hash);
            // gradients still flow into the loaded parameters: b, loaded with a's copy, steps to a's model
            b.loadParameters(copy);
            final float[] ga = a.computeGradient(data.pixels(32, 32), data.labels(32, 32)).clone();
            final float[] gb = b.computeGradient(data.pixels(32, 32), data.labels(32, 32)).clone();
            assertThat(gb).isEqualTo(ga);
            assertThatThrownBy(() -> a.loadParameters(new float[5])).hasMessageContaining("5 elements");
            assertThatThrownBy(() -> a.copyParameters(new float[5])).hasMessageContaining("5 elements");
        }
    }

    @Test
    void aCosineDecayTakesTheFullRateFirstHalfOfItMidwayAndNothingAtTheEnd() {
        final SyntheticImages data = new SyntheticImages(32, 10);
        try (DjlModel constant = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 2);
             DjlModel decayed = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 2)) {
            decayed.cosineDecay(2);
            assertThat(decayed.learningRate(0)).isEqualTo(0.05f);
            assertThat(decayed.learningRate(1)).isCloseTo(0.025f, org.assertj.core.data.Offset.offset(1e-7f));
            assertThat(decayed.learningRate(2)).isZero();
            assertThat(decayed.learningRate(7)).isZero();
            assertThat(constant.learningRate(7)).isEqualTo(0.05f);
            final float[] g = constant.computeGradient(data.pixels, data.labels).clone();
            constant.applyGradient(g);
            decayed.applyGradient(g);
            assertThat(decayed.hash()).as("step 0: the full rate").isEqualTo(constant.hash());
            constant.applyGradient(g);
            decayed.applyGradient(g);
            assertThat(decayed.hash()).as("step 1: half the rate").isNotEqualTo(constant.hash());
            final String before = decayed.hash();
            decayed.applyGradient(g);
            assertThat(decayed.hash()).as("step 2 of 2: rate 0, no change").isEqualTo(before);
            assertThatThrownBy(() -> decayed.cosineDecay(-1)).hasMessageContaining("-1");
        }
    }

    @Test
    void aCooldownKeepsTheRateThenTakesItDownInAStraightLineOverTheLastFifthOfTheRun() {
        final SyntheticImages data = new SyntheticImages(32, 10);
        try (DjlModel constant = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 2);
             DjlModel cooled = new DjlModel(ModelKind.MLP, 32, 0.05f, 0.9f, 2)) {
            cooled.cooldown(20);
            final org.assertj.core.data.Offset<Float> close = org.assertj.core.data.Offset.offset(1e-7f);
            // 20 steps: the last 4 (16-19) cool down, 0.05 x 4/5, 3/5, 2/5, 1/5
            assertThat(cooled.learningRate(0)).isEqualTo(0.05f);
            assertThat(cooled.learningRate(15)).isEqualTo(0.05f);
            assertThat(cooled.learningRate(16)).isCloseTo(0.04f, close);
            assertThat(cooled.learningRate(18)).isCloseTo(0.02f, close);
            assertThat(cooled.learningRate(19)).isCloseTo(0.01f, close);
            assertThat(cooled.learningRate(20)).isZero();
            assertThat(cooled.learningRate(99)).isZero();
            cooled.cosineDecay(2);
            assertThat(cooled.learningRate(1)).as("the schedule set last counts").isCloseTo(0.025f, close);
            cooled.cooldown(20);
            final float[] g = constant.computeGradient(data.pixels, data.labels).clone();
            for (int step = 0; step < 16; step++) {
                constant.applyGradient(g);
                cooled.applyGradient(g);
            }
            assertThat(cooled.hash()).as("steps 0-15 at the full rate").isEqualTo(constant.hash());
            constant.applyGradient(g);
            cooled.applyGradient(g);
            assertThat(cooled.hash()).as("step 16 cooled").isNotEqualTo(constant.hash());
            assertThatThrownBy(() -> cooled.cooldown(-1)).hasMessageContaining("-1");
        }
    }

    @Test
    void badModelNamesAndParametersAreClearErrors() {
        assertThat(ModelKind.parse("CNN")).isEqualTo(ModelKind.CNN);
        assertThatThrownBy(() -> ModelKind.parse("resnet")).hasMessage("unknown model 'resnet': expected mlp or cnn");
        assertThatThrownBy(() -> new DjlModel(ModelKind.MLP, 0, 0.1f, 0.9f, 1)).hasMessageContaining("batch size");
    }

    @Test
    void computingAheadLeavesTheModelBitwiseAsItWasAndPredictsItsSteps() {
        final int batch = 16;
        final SyntheticImages train = new SyntheticImages(4 * batch, 3);
        try (DjlModel a = new DjlModel(ModelKind.MLP, batch, 0.05f, 0.9f, 7);
             DjlModel b = new DjlModel(ModelKind.MLP, batch, 0.05f, 0.9f, 7)) {
            final float[] g0 = a.computeGradient(train.pixels(0, batch), train.labels(0, batch)).clone();
            a.applyGradient(g0);
            b.applyGradient(g0);
            // the model two steps on: g1 then nothing new, the velocity carried on
            final float[] g1 = a.computeGradient(train.pixels(batch, batch), train.labels(batch, batch)).clone();
            final float[] ahead = new float[a.elements()];
            a.predictInto(ahead, g1, null, new float[] {0.9f, 0.9f});
            b.applyGradient(g1);
            b.applyGradient(new float[b.elements()]);
            final float[] stepped = new float[b.elements()];
            b.copyParameters(stepped);
            for (int i = 0; i < ahead.length; i += 997) {
                assertThat(ahead[i]).as("element %d", i).isCloseTo(stepped[i], offset(1e-6f));
            }
            // a gradient computed ahead is the gradient at those parameters, and the model stays as it was
            final String before = a.hash();
            final float[] there = a.computeGradientAt(stepped, train.pixels(2 * batch, batch), train.labels(2 * batch, batch)).clone();
            assertThat(a.hash()).isEqualTo(before);
            assertThat(b.computeGradient(train.pixels(2 * batch, batch), train.labels(2 * batch, batch))).containsExactly(there);
        }
    }
}
