package io.serene.harness.bench;

import io.serene.worker.Aggregate;
import io.serene.worker.BlockFloat;

import java.util.Arrays;
import java.util.List;

/** Checks aggregates against the exact integer sums of the quantized inputs and the float sums. */
final class Verifier {
    final float[][] gradients;
    final float[] sum;
    final int workers;
    final int q;
    boolean exact = true;
    double maxError;
    double maxBound;

    Verifier(final AllreduceBench.Config config) {
        workers = config.workers;
        gradients = new float[workers][config.elements];
        sum = new float[config.elements];
        q = BlockFloat.scaleBits(workers);
    }

    boolean check(final List<Aggregate> aggregates) {
        final Aggregate first = aggregates.get(0);
        boolean ok = first.contributorCount() == workers;
        for (final Aggregate a : aggregates) {
            ok &= Arrays.equals(a.integerSums(), first.integerSums());
        }
        final int k = first.chunkElements();
        first.sumInto(sum);
        final int[] sums = first.integerSums();
        for (int i = 0; i < sum.length; i++) {
            final int exponent = first.exponent(i / k);
            int expected = 0;
            double real = 0;
            for (int w = 0; w < workers; w++) {
                expected += BlockFloat.quantize(gradients[w][i], exponent, q);
                real += gradients[w][i];
            }
            ok &= expected == sums[i];
            maxError = Math.max(maxError, Math.abs(sum[i] - real));
            maxBound = Math.max(maxBound, BlockFloat.errorBound(workers, exponent) + Math.ulp((float) real));
        }
        exact &= ok;
        return ok;
    }
}
