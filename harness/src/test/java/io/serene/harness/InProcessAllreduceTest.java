package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.transport.FaultInjector;
import io.serene.worker.Aggregate;
import io.serene.worker.BlockFloat;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

class InProcessAllreduceTest {
    @Test
    void shouldDeliverExactIntegerSumToEveryWorker() {
        final int n = 4;
        final int elements = 1000;
        final InProcessCluster cluster = new InProcessCluster(
            new SwitchContext().maxPoolSize(8).chunkElements(64), n, elements, FaultInjector.none(), 10_000, 5_000);
        final SplittableRandom random = new SplittableRandom(1);
        long previousFingerprint = 0;
        for (int round = 0; round < 3; round++) {
            final float[][] g = new float[n][elements];
            for (int w = 0; w < n; w++) {
                for (int i = 0; i < elements; i++) {
                    g[w][i] = (float) random.nextGaussian() * (i % 7 + 1);
                }
            }
            final List<CompletableFuture<Aggregate>> futures = cluster.submit(round, g);
            assertThat(cluster.runUntilDone(futures, Long.MAX_VALUE)).isTrue();
            final Aggregate first = futures.get(0).join();
            final float[] sum = first.sum();
            for (final CompletableFuture<Aggregate> f : futures) {
                assertThat(f.join().integerSums()).isEqualTo(first.integerSums());
                assertThat(f.join().fingerprint()).isEqualTo(first.fingerprint());
            }
            // another round's aggregate (other sums) has another fingerprint
            assertThat(first.fingerprint()).isNotEqualTo(previousFingerprint);
            previousFingerprint = first.fingerprint();
            final int q = BlockFloat.scaleBits(n);
            for (int i = 0; i < elements; i++) {
                final int exp = first.exponent(i / 64);
                int expected = 0;
                double real = 0;
                for (int w = 0; w < n; w++) {
                    expected += BlockFloat.quantize(g[w][i], exp, q);
                    real += g[w][i];
                }
                assertThat(first.integerSums()[i]).as("element %d", i).isEqualTo(expected);
                assertThat(Math.abs(sum[i] - real)).isLessThanOrEqualTo(BlockFloat.errorBound(n, exp) + Math.ulp((float) real));
            }
            assertThat(first.contributorCount()).isEqualTo(n);
        }
        assertThat(cluster.errors()).isEmpty();
    }

    @Test
    void shouldAggregateExactlyWithMoreWorkersThanOneBitmapWord() {
        final int n = 130;
        final int elements = 300;
        final InProcessCluster cluster = new InProcessCluster(
            new SwitchContext().maxWorkers(256).maxPoolSize(16).chunkElements(32),
            n, elements, new FaultInjector(3, 0.05, 0.02, 0.1), 10_000, 5_000);
        final SplittableRandom random = new SplittableRandom(3);
        final float[][] g = new float[n][elements];
        for (int w = 0; w < n; w++) {
            for (int i = 0; i < elements; i++) {
                g[w][i] = (float) random.nextGaussian();
            }
        }
        final List<CompletableFuture<Aggregate>> futures = cluster.submit(0, g);
        assertThat(cluster.runUntilDone(futures, Long.MAX_VALUE)).isTrue();
        final Aggregate first = futures.get(0).join();
        assertThat(first.contributorCount()).isEqualTo(n);
        assertThat(first.contributors().cardinality()).isEqualTo(n);
        final int q = BlockFloat.scaleBits(n);
        for (int i = 0; i < elements; i++) {
            int expected = 0;
            for (int w = 0; w < n; w++) {
                expected += BlockFloat.quantize(g[w][i], first.exponent(i / 32), q);
            }
            assertThat(first.integerSums()[i]).isEqualTo(expected);
        }
        for (final CompletableFuture<Aggregate> f : futures) {
            assertThat(f.join().integerSums()).isEqualTo(first.integerSums());
        }
        assertThat(cluster.errors()).isEmpty();
    }
}
