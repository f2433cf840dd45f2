package io.serene.systemtests;

import io.serene.worker.Aggregate;
import io.serene.worker.BlockFloat;

import io.serene.worker.WorkerHost;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/** Seeded test gradients and the exactness check every system test applies. */
final class Gradients {
    private final SplittableRandom random;
    private final float[][] gradients;

    Gradients(final long seed, final int workers, final int elements) {
        random = new SplittableRandom(seed);
        gradients = new float[workers][elements];
    }

    float[][] next() {
        for (final float[] g : gradients) {
            final double magnitude = Math.scalb(1.0, random.nextInt(-16, 8));
            for (int i = 0; i < g.length; i++) {
                g[i] = (float) (random.nextGaussian() * magnitude);
            }
        }
        return gradients;
    }

    /** Runs rounds 0 .. rounds-1 on every worker with fresh gradients and checks each one exact. */
    void runExactRounds(final List<WorkerHost> workers, final int rounds, final String what) throws Exception {
        runExactRounds(workers, rounds, () -> true, what);
    }

    /** Runs at least {@code rounds} exact rounds, and more until {@code enough} holds (checked between rounds). */
    void runExactRounds(final List<WorkerHost> workers, final int rounds, final BooleanSupplier enough, final String what)
        throws Exception {
        for (int round = 0; round < rounds || !enough.getAsBoolean(); round++) {
            final float[][] g = next();
            final List<CompletableFuture<Aggregate>> futures = new ArrayList<>();
            for (int w = 0; w < workers.size(); w++) {
                futures.add(workers.get(w).allreduce(round, g[w]));
            }
            final List<Aggregate> aggregates = new ArrayList<>();
            for (final CompletableFuture<Aggregate> f : futures) {
                aggregates.add(f.get(60, TimeUnit.SECONDS));
            }
            assertExact(what + " round " + round, g, aggregates);
            aggregates.forEach(Aggregate::release);
        }
    }

    /** Every worker got the same integer sums, equal to the sum of every worker's quantized inputs. */
    static void assertExact(final String what, final float[][] inputs, final List<Aggregate> aggregates) {
        final Aggregate first = aggregates.get(0);
        final int workers = inputs.length;
        final int q = BlockFloat.scaleBits(workers);
        for (final Aggregate a : aggregates) {
            assertThat(a.integerSums()).as(what + ": agreement").isEqualTo(first.integerSums());
            assertThat(a.contributorCount()).isEqualTo(workers);
        }
        final int k = first.chunkElements();
        for (int i = 0; i < inputs[0].length; i++) {
            final int exponent = first.exponent(i / k);
            int expected = 0;
            for (final float[] input : inputs) {
                expected += BlockFloat.quantize(input[i], exponent, q);
            }
            if (expected != first.integerSums()[i]) {
                assertThat(first.integerSums()[i]).as(what + ": element " + i).isEqualTo(expected);
            }
        }
    }

}
