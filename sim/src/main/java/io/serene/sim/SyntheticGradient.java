package io.serene.sim;

import io.serene.training.StragglerProfile;

/** The simulated workers' gradients: seeded, so a scenario's aggregates are the same on every run. */
final class SyntheticGradient {
    private SyntheticGradient() {
    }

    /**
     * Fills {@code into} with the gradient of worker w, round r: a SplitMix64 seed for the pair, then
     * a 64-bit LCG whose top 48 bits of each output give two floats in [-1, 1) (24 bits each; the
     * LCG's low bits, which are weak, are not used). Returns {@code into}, which the engine copies at once.
     */
    static float[] fill(final float[] into, final long seed, final int w, final int round) {
        long state = StragglerProfile.mix(StragglerProfile.mix(seed) ^ ((long) w << 32 | (round & 0xFFFF_FFFFL)));
        for (int i = 0; i < into.length; i += 2) {
            state = state * 0x5851F42D4C957F2DL + 0x14057B7EF767814FL;
            into[i] = (state >>> 40) * 0x1.0p-23f - 1f;
            if (i + 1 < into.length) {
                into[i + 1] = ((state >>> 16) & 0xFF_FFFFL) * 0x1.0p-23f - 1f;
            }
        }
        return into;
    }
}
