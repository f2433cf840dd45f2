package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.training.DjlModel;
import io.serene.training.ModelKind;
import io.serene.training.data.SyntheticImages;
import io.serene.transport.FaultInjector;
import io.serene.worker.Aggregate;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two MLP workers training through the switch over the in-process transport: they learn, and
 * under BSP the final models are bitwise equal on every worker and with or without packet loss,
 * duplication and reordering (docs/design.md invariant 7).
 */
class InProcessTrainingTest {
    private static final int WORKERS = 2;
    private static final int BATCH = 32;
    private static final int ROUNDS = 30;

    /** Final model hashes of every worker, then the accuracy of worker 0 on a held-out set. */
    private static List<Object> train(final FaultInjector faults) {
        final SyntheticImages data = new SyntheticImages(WORKERS * ROUNDS * BATCH, 1);
        final SyntheticImages test = new SyntheticImages(500, 2);
        final List<DjlModel> models = new ArrayList<>();
        try {
            for (int w = 0; w < WORKERS; w++) {
                models.add(new DjlModel(ModelKind.MLP, BATCH, 0.05f, 0.9f, 7));
            }
            final InProcessCluster cluster = new InProcessCluster(new SwitchContext().maxPoolSize(64).chunkElements(256)
                .budgetBytes(8 << 20), WORKERS, models.get(0).elements(), faults, 10_000, 5_000);
            final float[] averaged = new float[models.get(0).elements()];
            for (int round = 0; round < ROUNDS; round++) {
                final float[][] gradients = new float[WORKERS][];
                for (int w = 0; w < WORKERS; w++) {
                    // disjoint shards: worker w takes every WORKERS-th batch
                    final int from = (round * WORKERS + w) * BATCH;
                    gradients[w] = models.get(w).computeGradient(data.pixels(from, BATCH), data.labels(from, BATCH)).clone();
                }
                final List<CompletableFuture<Aggregate>> futures = cluster.submit(round, gradients);
                assertThat(cluster.runUntilDone(futures, Long.MAX_VALUE)).isTrue();
                for (int w = 0; w < WORKERS; w++) {
                    final Aggregate aggregate = futures.get(w).join();
                    assertThat(aggregate.contributorCount()).isEqualTo(WORKERS);
                    aggregate.averageInto(averaged);
                    models.get(w).applyGradient(averaged);
                }
            }
            assertThat(cluster.errors()).isEmpty();
            final List<Object> result = new ArrayList<>();
            for (final DjlModel m : models) {
                result.add(m.hash());
            }
            result.add(models.get(0).accuracy(test.pixels, test.labels));
            return result;
        } finally {
            models.forEach(DjlModel::close);
        }
    }

    @Test
    void twoWorkersLearnThroughTheSwitchAndLossDoesNotChangeTheModel() {
        final List<Object> clean = train(FaultInjector.none());
        assertThat((double) clean.get(WORKERS)).as("accuracy on held-out images").isGreaterThan(0.8);
        assertThat(clean.get(1)).as("every worker holds the same model").isEqualTo(clean.get(0));
        final long seed = 42;
        final List<Object> lossy = train(new FaultInjector(seed, 0.05, 0.02, 0.02));
        assertThat(lossy.subList(0, WORKERS)).as("seed %d: 5%% loss, 2%% duplication and reordering", seed)
            .isEqualTo(clean.subList(0, WORKERS));
    }
}
