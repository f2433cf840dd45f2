package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.transport.FaultInjector;
import io.serene.worker.Aggregate;
import io.serene.worker.BlockFloat;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Exact in-network allreduce under random loss, duplication and reordering on the in-process
 * transport. jqwik prints the falsifying sample, including the fault seed, on failure.
 */
class AllreduceProperties {
    @Property(tries = 150)
    void everyWorkerGetsTheSameExactSumAndNothingIsCountedTwice(
        @ForAll @IntRange(min = 1, max = 9) final int workers,
        @ForAll @IntRange(min = 1, max = 700) final int elements,
        @ForAll @IntRange(min = 1, max = 64) final int chunkElements,
        @ForAll @IntRange(min = 1, max = 12) final int poolSize,
        @ForAll @IntRange(min = 1, max = 4) final int rounds,
        @ForAll @DoubleRange(min = 0, max = 0.2) final double loss,
        @ForAll @DoubleRange(min = 0, max = 0.1) final double duplication,
        @ForAll @DoubleRange(min = 0, max = 0.3) final double reordering,
        @ForAll final long seed) {
        final long budget = 1 << 20;
        final SwitchContext context = new SwitchContext().budgetBytes(budget).maxJobs(2).maxWorkers(16)
            .chunkElements(chunkElements).maxPoolSize(poolSize).roundRing(8);
        final InProcessCluster cluster = new InProcessCluster(context, workers, elements,
            new FaultInjector(seed, loss, duplication, reordering), 10_000, 3_000);
        final SplittableRandom random = new SplittableRandom(seed ^ 0x5EED);
        final int q = BlockFloat.scaleBits(workers);

        final List<float[][]> inputs = new ArrayList<>();
        final List<List<CompletableFuture<Aggregate>>> results = new ArrayList<>();
        for (int round = 0; round < rounds; round++) {
            final float[][] g = new float[workers][elements];
            for (int w = 0; w < workers; w++) {
                final double magnitude = Math.pow(2, random.nextInt(-20, 20));
                for (int i = 0; i < elements; i++) {
                    g[w][i] = (float) (random.nextGaussian() * magnitude);
                }
            }
            inputs.add(g);
            results.add(cluster.submit(round, g));
        }
        final List<CompletableFuture<Aggregate>> all = new ArrayList<>();
        results.forEach(all::addAll);
        assertThat(cluster.runUntilDone(all, 600_000_000_000L)).as("all rounds complete (seed %d)", seed).isTrue();

        for (int round = 0; round < rounds; round++) {
            final Aggregate first = results.get(round).get(0).join();
            for (final CompletableFuture<Aggregate> f : results.get(round)) {
                assertThat(f.join().integerSums()).as("agreement, round %d", round).isEqualTo(first.integerSums());
            }
            final float[][] g = inputs.get(round);
            for (int i = 0; i < elements; i++) {
                final int chunk = i / chunkElements;
                byte agreed = Byte.MIN_VALUE;
                for (int w = 0; w < workers; w++) {
                    agreed = (byte) Math.max(agreed, BlockFloat.exponentOf(g[w], chunk * chunkElements,
                        Math.min(chunkElements, elements - chunk * chunkElements)));
                }
                assertThat(first.exponent(chunk)).isEqualTo(agreed);
                int expected = 0;
                for (int w = 0; w < workers; w++) {
                    expected += BlockFloat.quantize(g[w][i], agreed, q);
                }
                assertThat(first.integerSums()[i]).as("round %d element %d", round, i).isEqualTo(expected);
            }
            assertThat(first.contributorCount()).isEqualTo(workers);
        }
        final int chunks = (elements + chunkElements - 1) / chunkElements;
        final int lookAhead = Math.min(cluster.worker(0).poolSize(), chunks);
        final int stepsPerRound = (lookAhead + chunkElements - 1) / chunkElements + chunks;
        assertThat(cluster.pipeline().counters().get(SwitchCounter.CONTRIBUTIONS))
            .as("each worker's step counted exactly once")
            .isEqualTo((long) workers * stepsPerRound * rounds);
        assertThat(cluster.pipeline().releasedRound(1)).isEqualTo(rounds - 1);
        assertThat(cluster.pipeline().memory().totalBytes()).isLessThanOrEqualTo(budget);
        assertThat(cluster.errors()).isEmpty();
    }
}
