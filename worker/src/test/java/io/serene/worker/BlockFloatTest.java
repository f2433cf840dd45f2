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

    /** The two-addition rounding is Math.rint wherever a quantizer keeps the value, and clamps alike elsewhere. */
    @Property(tries = 2000)
    void roundingIsMathRintAndQuantizingIsTheRintReference(@ForAll final double v, @ForAll final float x,
                                                          @ForAll @IntRange(min = -126, max = 127) final int exponent,
                                                          @ForAll @IntRange(min = 1, max = 300) final int workers) {
        if (Math.abs(v) < 0x1p51) {
            // equal as numbers (a zero's sign is gone once cast to int)
            assertThat(BlockFloat.roundHalfEven(v) == Math.rint(v)).as("v %s", v).isTrue();
        }
        final int q = BlockFloat.scaleBits(workers);
        final double scale = BlockFloat.scale(exponent, q);
        final int limit = 1 << q;
        final int reference = Math.min(limit, Math.max(-limit, (int) Math.rint(x * scale)));
        assertThat(BlockFloat.quantize(x, scale, limit)).as("x %s at e %d q %d", x, exponent, q).isEqualTo(reference);
        final int[] out = new int[1];
        BlockFloat.quantizeChunk(new float[] {x}, 0, 1, exponent, q, out, false);
        assertThat(out[0]).isEqualTo(reference);
        final double r = Math.rint(x * scale);
        assertThat(BlockFloat.isSaturated(x, scale, limit)).isEqualTo(x != x || r > limit || r < -limit);
    }

    @Test
    void roundingTiesGoToEvenAndEdgesMatchRint() {
        final double[] edges = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, -0.0, 0.0, 0x1p51 - 0.5, -0x1p51 + 0.5,
            0x1p51 - 1.5, 1e-300, -1e-300, 4503599627370495.5 / 4};
        for (final double v : edges) {
            assertThat(BlockFloat.roundHalfEven(v) == Math.rint(v)).as("v %s", v).isTrue();
        }
        for (final double v : new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, 0x1p60, -0x1p60, 0x1p51, -0x1p51}) {
            assertThat((int) BlockFloat.roundHalfEven(v)).as("v %s", v).isEqualTo((int) Math.rint(v));
        }
        final float[] chunk = {Float.NaN, 1f, -3f, Float.NEGATIVE_INFINITY, Float.MAX_VALUE, Float.MIN_VALUE, -0f};
        assertThat(BlockFloat.exponentOf(chunk, 1, 2)).isEqualTo((byte) 2);
        assertThat(BlockFloat.exponentOf(chunk, 0, 2)).isEqualTo((byte) BlockFloat.MAX_EXPONENT);
        assertThat(BlockFloat.exponentOf(chunk, 3, 1)).isEqualTo((byte) BlockFloat.MAX_EXPONENT);
        assertThat(BlockFloat.exponentOf(chunk, 4, 1)).isEqualTo((byte) 127);
        assertThat(BlockFloat.exponentOf(chunk, 5, 2)).isEqualTo((byte) BlockFloat.MIN_EXPONENT);
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
