package io.serene.worker;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class BlockFloatTest {
    /** The stated bound: |dequantized sum - real sum| <= N * 2^(e - Q - 1) plus one float rounding. */
    @Property(tries = 500)
    void sumOfQuantizedValuesStaysWithinTheErrorBound(
        @ForAll @Size(min = 1, max = 64) final List<@FloatRange(min = -1e6f, max = 1e6f) Float> values,
        @ForAll @IntRange(min = -60, max = 20) final int shift) {
        final int n = values.size();
        final float[] xs = new float[n];
        for (int i = 0; i < n; i++) {
            xs[i] = Math.scalb(values.get(i), shift);
        }
        final int q = BlockFloat.scaleBits(n);
        final byte e = BlockFloat.exponentOf(xs, 0, n);
        long sum = 0;
        double real = 0;
        for (final float x : xs) {
            final int v = BlockFloat.quantize(x, e, q);
            assertThat(Math.abs((long) v)).isLessThanOrEqualTo(1L << q);
            assertThat(BlockFloat.isSaturated(x, e, q)).isFalse();
            sum += v;
            real += x;
        }
        assertThat(Math.abs(sum)).as("N contributions fit int32").isLessThan(Integer.MAX_VALUE);
        final float dequantized = BlockFloat.dequantize((int) sum, e, q);
        assertThat(Math.abs(dequantized - real))
            .isLessThanOrEqualTo(BlockFloat.errorBound(n, e) + Math.ulp((float) real) + Math.ulp(dequantized));
    }

    @Property
    void exponentBoundsEveryElement(@ForAll @Size(min = 1, max = 50) final List<Float> values) {
        final float[] xs = new float[values.size()];
        boolean finite = true;
        for (int i = 0; i < xs.length; i++) {
            xs[i] = values.get(i);
            finite &= Float.isFinite(xs[i]);
        }
        final int e = BlockFloat.exponentOf(xs, 0, xs.length);
        if (!finite) {
            assertThat(e).isEqualTo(BlockFloat.MAX_EXPONENT);
            return;
        }
        final int q = BlockFloat.scaleBits(1);
        for (final float x : xs) {
            // the exponent is a byte: magnitudes from 2^127 up are clamped, and flagged
            if (Math.abs((double) x) >= Math.scalb(1.0, e)) {
                assertThat(e).isEqualTo(BlockFloat.MAX_EXPONENT);
                assertThat(BlockFloat.isSaturated(x, e, q)).isTrue();
            }
        }
    }

    @Test
    void shouldClampValuesAboveTheAgreedExponentAndZeroNaN() {
        final int q = BlockFloat.scaleBits(4);
        assertThat(BlockFloat.quantize(8f, 2, q)).isEqualTo(1 << q);
        assertThat(BlockFloat.quantize(-8f, 2, q)).isEqualTo(-(1 << q));
        assertThat(BlockFloat.isSaturated(8f, 2, q)).isTrue();
        assertThat(BlockFloat.quantize(Float.NaN, 2, q)).isZero();
        assertThat(BlockFloat.isSaturated(Float.NaN, 2, q)).isTrue();
        assertThat(BlockFloat.quantize(Float.POSITIVE_INFINITY, 2, q)).isEqualTo(1 << q);
        final int[] out = new int[3];
        assertThat(BlockFloat.quantizeChunk(new float[] {1f, 100f, -0.5f}, 0, 3, 2, q, out, true)).isEqualTo(1);
        assertThat(out[1]).isEqualTo(1 << q);
    }

    @Test
    void scaleBitsLeaveHeadroomForEveryWorker() {
        assertThat(BlockFloat.scaleBits(1)).isEqualTo(30);
        assertThat(BlockFloat.scaleBits(2)).isEqualTo(29);
        assertThat(BlockFloat.scaleBits(4)).isEqualTo(28);
        assertThat(BlockFloat.scaleBits(5)).isEqualTo(27);
        assertThat(BlockFloat.scaleBits(256)).isEqualTo(22);
        for (int n = 1; n <= 1024; n++) {
            assertThat((long) n << BlockFloat.scaleBits(n)).isLessThanOrEqualTo(1L << 30);
        }
    }
}
