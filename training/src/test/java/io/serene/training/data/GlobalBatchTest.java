package io.serene.training.data;

import io.serene.training.DjlModel;

import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Batch sizes that keep a round's samples near N x B, and batches of those sizes. */
class GlobalBatchTest {
    @Test
    void underBspTheBatchStaysB() {
        final GlobalBatch sizes = new GlobalBatch(64, 4, true);
        assertThat(sizes.next()).as("before any round").isEqualTo(64);
        for (int r = 0; r < 50; r++) {
            sizes.applied(4);
            assertThat(sizes.next()).isEqualTo(64);
        }
    }

    @Test
    void fewerContributionsGrowTheBatchToKeepTheRoundsSamples() {
        final GlobalBatch sizes = new GlobalBatch(64, 4, true);
        for (int r = 0; r < GlobalBatch.WINDOW; r++) {
            sizes.applied(3);
        }
        assertThat(sizes.next()).as("64 x 4 / 3 = 85.3").isEqualTo(85);
        // a straggler's late gradient folded into one round of eight: mean 3.125 contributions
        sizes.applied(4);
        assertThat(sizes.next()).as("64 x 4 / 3.125 = 81.9").isEqualTo(82);
        for (int r = 0; r < GlobalBatch.WINDOW; r++) {
            sizes.applied(4);
        }
        assertThat(sizes.next()).as("every worker back: B again").isEqualTo(64);
    }

    @Test
    void theBatchGrowsAtMostToTwiceBAndCountsAreClamped() {
        final GlobalBatch sizes = new GlobalBatch(10, 8, true);
        sizes.applied(1);
        assertThat(sizes.next()).isEqualTo(20);
        assertThat(sizes.max()).isEqualTo(20);
        final GlobalBatch odd = new GlobalBatch(10, 8, true);
        odd.applied(0);
        odd.applied(99);
        assertThat(odd.next()).as("counts clamped to 1..N: mean 4.5").isEqualTo(18);
        final GlobalBatch off = new GlobalBatch(64, 4, false);
        off.applied(1);
        assertThat(off.next()).isEqualTo(64);
        assertThat(off.max()).isEqualTo(64);
        assertThatThrownBy(() -> new GlobalBatch(0, 4, true)).hasMessageContaining("positive");
    }

    @Test
    void batchesOfEverySizeCoverTheShardOncePerPass() {
        final int images = 40;
        final Batches batches = new Batches(split(images), shard(images), 4, 8, 5);
        final Set<Integer> seen = new HashSet<>();
        int taken = 0;
        for (final int size : new int[] {4, 8, 5, 7, 6, 4, 6}) {
            final float[] p = batches.next(size);
            assertThat(p).hasSize(size * DjlModel.PIXELS);
            assertThat(batches.labels()).hasSize(size);
            for (int b = 0; b < size; b++) {
                seen.add(Math.round(p[b * DjlModel.PIXELS] * 255));
            }
            taken += size;
        }
        assertThat(taken).isEqualTo(images);
        assertThat(seen).as("one pass: every image once").hasSize(images);
        assertThatThrownBy(() -> batches.next(9)).hasMessageContaining("outside 4..8");
        assertThatThrownBy(() -> batches.next(3)).hasMessageContaining("outside 4..8");
    }

    @Test
    void aRestoredWindowGivesTheBatchesTheOriginalWould() {
        final GlobalBatch original = new GlobalBatch(64, 4, true);
        final int[] counts = {4, 3, 3, 4, 2, 3, 4, 4, 3, 3, 2};
        for (final int c : counts) {
            original.applied(c);
        }
        final GlobalBatch restored = new GlobalBatch(64, 4, true);
        restored.restore(original.state());
        for (final int c : new int[] {3, 3, 4, 2, 4, 4, 4, 4, 4, 3}) {
            assertThat(restored.next()).isEqualTo(original.next());
            original.applied(c);
            restored.applied(c);
        }
        assertThatThrownBy(() -> restored.restore(new int[3])).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void batchesSkippedToADataPositionDrawWhatTheOriginalDrawsNext() {
        final FashionMnist.Split split = split(30);
        final int[] shard = shard(30);
        final Batches original = new Batches(split, shard, 4, 8, 9);
        // past the end of the first pass, so the skip reshuffles as the original did
        for (final int size : new int[] {8, 8, 7, 8, 5}) {
            original.next(size);
        }
        assertThat(original.drawn()).isEqualTo(36);
        final Batches resumed = new Batches(split, shard, 4, 8, 9);
        resumed.skipTo(original.drawn());
        for (final int size : new int[] {6, 8, 8, 8, 4}) {
            assertThat(resumed.next(size)).isEqualTo(original.next(size));
            assertThat(resumed.labels()).isEqualTo(original.labels());
        }
        assertThatThrownBy(() -> resumed.skipTo(3)).as("only a fresh instance").isInstanceOf(IllegalStateException.class);
    }

    /** A split of {@code images} images, image i's first pixel i and its label i mod 10. */
    private static FashionMnist.Split split(final int images) {
        final byte[] pixels = new byte[images * DjlModel.PIXELS];
        final byte[] labels = new byte[images];
        for (int i = 0; i < images; i++) {
            pixels[i * DjlModel.PIXELS] = (byte) i;
            labels[i] = (byte) (i % 10);
        }
        return new FashionMnist.Split(pixels, labels, 28, 28);
    }

    /** Every image of such a split. */
    private static int[] shard(final int images) {
        final int[] shard = new int[images];
        for (int i = 0; i < images; i++) {
            shard[i] = i;
        }
        return shard;
    }
}
