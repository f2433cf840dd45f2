package io.serene.training;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

class EvaluationShareTest {
    @TempDir
    Path dir;

    @Test
    void onlyBitIdenticalModelsOfOneRoundShareAName() {
        final float[] a = {1f, 2f, 3f};
        assertThat(EvaluationShare.key(9, a)).isEqualTo(EvaluationShare.key(9, a.clone()));
        assertThat(EvaluationShare.key(9, a)).isNotEqualTo(EvaluationShare.key(19, a));
        assertThat(EvaluationShare.key(9, a)).isNotEqualTo(EvaluationShare.key(9, new float[] {1f, 2f, Math.nextUp(3f)}));
        assertThat(EvaluationShare.key(9, new float[] {0f})).isNotEqualTo(EvaluationShare.key(9, new float[] {-0f}));
    }

    @Test
    void oneOfManyClaimsAModelAndTheOthersReadItsAccuracy() throws Exception {
        final String key = EvaluationShare.key(4, new float[] {0.5f, -1f});
        final AtomicInteger evaluated = new AtomicInteger();
        final ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            final List<CompletableFuture<Double>> seen = new ArrayList<>();
            for (int w = 0; w < 8; w++) {
                // each worker its own share object on the same directory, as separate processes have
                final EvaluationShare share = new EvaluationShare(dir);
                seen.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        if (share.claim(key)) {
                            evaluated.incrementAndGet();
                            Thread.sleep(50);
                            share.publish(key, 0.8125);
                            return 0.8125;
                        }
                        return share.await(key, 10_000);
                    } catch (final InterruptedException ex) {
                        throw new IllegalStateException(ex);
                    }
                }, pool));
            }
            for (final CompletableFuture<Double> f : seen) {
                assertThat(f.get()).isEqualTo(0.8125);
            }
            assertThat(evaluated.get()).isEqualTo(1);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void anAccuracyNeverPublishedIsNotWaitedForBeyondThePatience() throws Exception {
        final EvaluationShare share = new EvaluationShare(dir.resolve("nested"));
        final String key = EvaluationShare.key(0, new float[] {1f});
        assertThat(share.claim(key)).isTrue();
        // the claimer died: the others give up waiting and evaluate themselves
        assertThat(new EvaluationShare(dir.resolve("nested")).claim(key)).isFalse();
        assertThat(share.await(key, 30)).isNaN();
    }
}
