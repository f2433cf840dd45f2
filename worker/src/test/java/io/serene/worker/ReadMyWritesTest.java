package io.serene.worker;

import io.serene.protocol.sync.LateMode;
import org.junit.jupiter.api.Test;

import java.util.concurrent.ConcurrentLinkedQueue;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class ReadMyWritesTest {
    private static final int Q = BlockFloat.scaleBits(2);

    /** An aggregate of 2 chunks x 2 elements whose sums are the given floats, with these contributors per chunk. */
    private static Aggregate aggregate(final int round, final float[] sum, final long chunk0, final long chunk1) {
        final RoundBuffers b = new RoundBuffers(2, 4, 1, 1);
        for (int i = 0; i < 4; i++) {
            b.integerSums[i] = BlockFloat.quantize(sum[i], 4, Q);
        }
        b.agreedExp[0] = 4;
        b.agreedExp[1] = 4;
        b.chunkBitmaps[0] = chunk0;
        b.chunkBitmaps[1] = chunk1;
        b.chunkContributors[0] = Long.bitCount(chunk0);
        b.chunkContributors[1] = Long.bitCount(chunk1);
        return new Aggregate(round, 2, Q, 4, 2, b, false, new ConcurrentLinkedQueue<>());
    }

    @Test
    void ownContributionsLeaveThePendingPartOnceTheirAggregateIsApplied() {
        final ReadMyWrites rmw = new ReadMyWrites(4, 2, 0, 1f);
        final float[] params = new float[4];
        rmw.contributed(0, new float[] {1, 1, 2, 2});
        rmw.contributed(1, new float[] {3, 3, 4, 4});
        assertThat(rmw.pending()).containsExactly(4, 4, 6, 6);
        final float[] view = new float[4];
        rmw.view(params, view);
        assertThat(view).containsExactly(-2f, -2f, -3f, -3f);
        // round 0: chunk 0 holds both workers, chunk 1 missed worker 0 (late) and is folded
        rmw.apply(aggregate(0, new float[] {2, 2, 5, 5}, 0b11, 0b10), params, LateMode.FOLD);
        assertThat(params).containsExactly(new float[] {-1f, -1f, -5f, -5f}, within(1e-6f));
        assertThat(rmw.pending()).containsExactly(3, 3, 6, 6);
        // round 1 holds worker 0's round 1 values and, in chunk 1, its folded round 0 values
        rmw.apply(aggregate(1, new float[] {4, 4, 8, 8}, 0b11, 0b11), params, LateMode.FOLD);
        assertThat(rmw.pending()).containsExactly(0, 0, 0, 0);
        assertThat(params).containsExactly(new float[] {-3f, -3f, -9f, -9f}, within(1e-6f));
    }

    @Test
    void droppedLateValuesLeaveAtOnce() {
        final ReadMyWrites rmw = new ReadMyWrites(4, 2, 0, 0.5f);
        final float[] params = new float[4];
        rmw.contributed(0, new float[] {1, 1, 2, 2});
        rmw.apply(aggregate(0, new float[] {2, 2, 5, 5}, 0b11, 0b10), params, LateMode.DROP);
        assertThat(rmw.pending()).containsExactly(0, 0, 0, 0);
        rmw.contributed(1, new float[4]);
        assertThatThrownBy(() -> rmw.contributed(1, new float[4])).hasMessageContaining("already contributed");
    }
}
