package io.serene.launch;

import io.serene.training.DeviceModel;
import io.serene.training.TrainSettings;
import io.serene.training.data.Batches;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The DDP baseline's plan: each worker's batches as Serene's worker draws them, its steps as Serene's modelled device makes them. */
class DdpBaselineTest {
    @Test
    void thePlanHoldsEachWorkersBatchesAndModelledSteps(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 200, 20, 3);
        final FashionMnist data = FashionMnist.load(dir);
        final int workers = 3;
        final int rounds = 40;
        final int batch = 8;
        // worker 1 three times slower; every worker pauses a step now and then
        final TrainSettings t = TrainSettings.builder().batch(batch).seed(9).stragglers("persistent:1:x3+slow:p=0.2,pause=1.0-1.0")
            .device(DeviceModel.parse("--step-time", "40ms")).build();
        final Path plan = dir.resolve(DdpBaseline.PLAN);
        final double total = DdpBaseline.writePlan(plan, data.train, t, workers, rounds);
        final ByteBuffer in = ByteBuffer.wrap(Files.readAllBytes(plan)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(new int[] {in.getInt(), in.getInt(), in.getInt()}).containsExactly(workers, rounds, batch);
        for (int w = 0; w < workers; w++) {
            // the images of Serene's worker w's batches, round by round (a shard of 66 images: passes in new orders)
            final Batches serene = Batches.ofWorker(data.train, w, workers, batch, batch, t.seed());
            for (int round = 0; round < rounds; round++) {
                final float[] pixels = serene.next(batch);
                for (int b = 0; b < batch; b++) {
                    final int index = in.getInt();
                    final float[] image = new float[784];
                    data.train.image(index, image, 0);
                    for (int p = 0; p < 784; p += 97) {
                        assertThat(image[p]).as("worker %d round %d image %d", w, round, b).isEqualTo(pixels[b * 784 + p]);
                    }
                    assertThat(data.train.label(index)).isEqualTo(serene.labels()[b]);
                }
            }
        }
        double sum = 0;
        int paused = 0;
        for (int w = 0; w < workers; w++) {
            for (int round = 0; round < rounds; round++) {
                final double seconds = in.getDouble();
                sum += seconds;
                final double base = w == 1 ? 0.12 : 0.04;
                // a pause of one step doubles the step (the slow pattern is a factor, times the persistent one)
                assertThat(seconds).isIn(base, 2 * base);
                paused += seconds > base ? 1 : 0;
            }
        }
        assertThat(in.hasRemaining()).isFalse();
        assertThat(paused).as("about a fifth of the steps paused").isBetween(10, 40);
        assertThat(total).isCloseTo(sum, within(1e-9));
    }
}
