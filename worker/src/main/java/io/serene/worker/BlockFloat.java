package io.serene.worker;

import io.serene.protocol.Packet;

import io.serene.protocol.sync.StepLayout;

/**
 * Block floating point quantization. A chunk shares one exponent e (every |x| in it is below
 * 2^e); an element is sent as the integer round(x * 2^(Q - e)) with Q = 30 - ceil(log2 N), so
 * each |value| <= 2^Q and the sum of N contributions stays within 2^30: int32 cannot overflow.
 * The workers agree on e per chunk as the maximum of their local exponents (through the switch).
 *
 * <p>Exponents are bytes, so a chunk holding a magnitude of 2^127 or more (or an infinity or NaN)
 * gets exponent 127 and those elements are clamped and flagged, never wrapped.
 *
 * <p>Error bound: quantizing x costs at most 2^(e - Q - 1) (round to nearest), so the dequantized
 * sum of N contributions differs from the exact real sum by at most N * 2^(e - Q - 1) plus one
 * float rounding of the result (relative 2^-24).
 */
public final class BlockFloat {
    public static final int MIN_EXPONENT = Packet.MIN_EXPONENT;
    public static final int MAX_EXPONENT = Packet.MAX_EXPONENT;

    /** The bits of Float.MAX_VALUE: larger magnitude bits are infinity or NaN. */
    private static final int FINITE_BITS = Float.floatToRawIntBits(Float.MAX_VALUE);

    /**
     * 1.5 x 2^52: for |v| < 2^51, (v + this) - this is v rounded to an integer, ties to even (the
     * sum's rounding does it), bit for bit Math.rint(v), in two additions a quick JIT compiles inline
     * (Math.rint is a call to StrictMath there). Larger magnitudes, infinities and NaN come out
     * beyond +-2^51, infinite or NaN, which the quantizers clamp (or zero) exactly as they clamp rint's.
     */
    private static final double ROUNDING = 0x1.8p52;

    private BlockFloat() {
    }

    /** Q for N workers: the number of fractional bits below the shared exponent. */
    public static int scaleBits(final int workers) {
        if (workers < 1) {
            throw new IllegalArgumentException("workers must be >= 1, was " + workers);
        }
        final int log2 = 32 - Integer.numberOfLeadingZeros(workers - 1);
        return 30 - log2;
    }

    /** The smallest e with |x| < 2^e for every x in src[from, from + n); non-finite values give MAX_EXPONENT. */
    public static byte exponentOf(final float[] src, final int from, final int n) {
        // the largest magnitude as bits: without the sign bit a float's bits order as its magnitude
        // does, and infinity and NaN lie above every finite value, so one check after the loop
        // catches them; integer compares, which the quick JIT (C1) compiles inline and C2 vectorizes
        int maxBits = 0;
        final int end = from + n;
        for (int i = from; i < end; i++) {
            final int bits = Float.floatToRawIntBits(src[i]) & 0x7fffffff;
            maxBits = bits > maxBits ? bits : maxBits;
        }
        if (maxBits > FINITE_BITS) {
            return (byte) MAX_EXPONENT;
        }
        return exponentOfMagnitude(Float.intBitsToFloat(maxBits));
    }

    /** Math.rint(v) wherever |v| < 2^51, and beyond the int range, infinite or NaN where rint is (see {@link #ROUNDING}). */
    static double roundHalfEven(final double v) {
        return (v + ROUNDING) - ROUNDING;
    }

    static byte exponentOfMagnitude(final float maxAbs) {
        if (maxAbs < Float.MIN_NORMAL) {
            return (byte) MIN_EXPONENT;
        }
        return (byte) Math.min(MAX_EXPONENT, Math.getExponent(maxAbs) + 1);
    }

    /**
     * Quantizes one element with exponent e and scale bits q: rint(x * 2^(q - e)). Values outside
     * the representable range (a local exponent above the agreed one, infinities) are clamped to
     * +-2^q; NaN becomes 0. {@link #isSaturated(float, int, int)} tells whether that happened.
     */
    public static int quantize(final float x, final int exponent, final int q) {
        return quantize(x, scale(exponent, q), 1 << q);
    }

    /** The multiplier 2^(q - e) of {@link #quantize(float, double, int)}. */
    public static double scale(final int exponent, final int q) {
        return Math.scalb(1.0, q - exponent);
    }

    /**
     * {@link #quantize(float, int, int)} with the chunk's scale and limit 2^q precomputed: rounds to
     * nearest, ties to even (as Math.rint: {@link #roundHalfEven}), clamps to [-limit, limit]; NaN gives 0.
     */
    public static int quantize(final float x, final double scale, final int limit) {
        // the int cast saturates at the int range (and maps NaN to 0) before the clamp
        return Math.min(limit, Math.max(-limit, (int) roundHalfEven(x * scale)));
    }

    /** Whether {@link #quantize} clamps or zeroes x. */
    public static boolean isSaturated(final float x, final double scale, final int limit) {
        final double r = roundHalfEven(x * scale);
        return x != x || r > limit || r < -limit;
    }

    /**
     * Quantizes {@code n} elements from {@code src[from]} at exponent e into {@code dst[0, n)} and
     * returns how many were clamped (or were NaN). The main loop has no branches so the JIT can
     * vectorize it: the clamp is Math.min and Math.max, which C2 turns into vector min and max
     * (written as two conditional expressions it does not vectorize, and the loop runs 4-5x slower
     * on JDK 25; the quick JIT inlines either form alike); the per-element check runs only when
     * clamping is possible at all, that is when the chunk's own exponent exceeds the agreed one or
     * it holds NaN or infinity.
     */
    public static int quantizeChunk(final float[] src, final int from, final int n, final int exponent, final int q,
                                    final int[] dst, final boolean mayClamp) {
        final double scale = scale(exponent, q);
        final int limit = 1 << q;
        for (int i = 0; i < n; i++) {
            dst[i] = Math.min(limit, Math.max(-limit, (int) roundHalfEven(src[from + i] * scale)));
        }
        if (!mayClamp) {
            return 0;
        }
        int saturated = 0;
        for (int i = 0; i < n; i++) {
            if (isSaturated(src[from + i], scale, limit)) {
                saturated++;
            }
        }
        return saturated;
    }

    /**
     * The local exponent of every chunk of a gradient (see {@link #exponentOf}); safe on any
     * thread, so a caller can do this scan before handing the gradient to the worker's thread.
     */
    public static byte[] chunkExponents(final float[] gradient, final int chunkElements, final byte[] out) {
        final int chunks = StepLayout.chunks(gradient.length, chunkElements);
        if (out.length != chunks) {
            throw new IllegalArgumentException("need " + chunks + " exponents, got room for " + out.length);
        }
        for (int c = 0; c < chunks; c++) {
            out[c] = exponentOf(gradient, c * chunkElements, Math.min(chunkElements, gradient.length - c * chunkElements));
        }
        return out;
    }

    /** Whether {@link #quantize} clamps or zeroes x. */
    public static boolean isSaturated(final float x, final int exponent, final int q) {
        return isSaturated(x, scale(exponent, q), 1 << q);
    }

    /** The float value of an integer sum at exponent e and scale bits q (one rounding, deterministic). */
    public static float dequantize(final int sum, final int exponent, final int q) {
        return (float) (sum * dequantizeFactor(exponent, q));
    }

    /** 2^(e - q): an int32 times it is exact in double, so one rounding to float remains. */
    public static double dequantizeFactor(final int exponent, final int q) {
        return Math.scalb(1.0, exponent - q);
    }

    /** The bound on |dequantized sum - real sum| for N contributions at exponent e (excluding the final float rounding). */
    public static double errorBound(final int workers, final int exponent) {
        return workers * Math.scalb(1.0, exponent - scaleBits(workers) - 1);
    }
}
