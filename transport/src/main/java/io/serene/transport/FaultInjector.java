package io.serene.transport;

import java.util.SplittableRandom;

/**
 * Seeded packet fault injection, shared by every transport: each packet sent through it is lost,
 * delivered once, or duplicated, and each delivered copy may be held back (reordered).
 * Not thread-safe: one injector per sending thread.
 */
public final class FaultInjector {
    private final long seed;
    private final double lossRate;
    private final double duplicateRate;
    private final double reorderRate;
    private final SplittableRandom random;
    private long lost;
    private long duplicated;
    private long reordered;

    public FaultInjector(final long seed, final double lossRate, final double duplicateRate, final double reorderRate) {
        check("loss", lossRate);
        check("duplicate", duplicateRate);
        check("reorder", reorderRate);
        this.seed = seed;
        this.lossRate = lossRate;
        this.duplicateRate = duplicateRate;
        this.reorderRate = reorderRate;
        this.random = new SplittableRandom(seed);
    }

    /** An injector that never interferes. */
    public static FaultInjector none() {
        return new FaultInjector(0, 0, 0, 0);
    }

    private static void check(final String name, final double rate) {
        if (!(rate >= 0 && rate < 1)) {
            throw new IllegalArgumentException(name + " rate must be in [0, 1), was " + rate);
        }
    }

    /** A new injector with the same rates and a seed derived for stream {@code stream}. */
    public FaultInjector fork(final long stream) {
        return new FaultInjector(seed * 0x9E3779B97F4A7C15L + stream, lossRate, duplicateRate, reorderRate);
    }

    public boolean isActive() {
        return lossRate > 0 || duplicateRate > 0 || reorderRate > 0;
    }

    /** How many copies of the next packet to deliver: 0 (lost), 1 or 2 (duplicated). */
    public int copies() {
        if (lossRate > 0 && random.nextDouble() < lossRate) {
            lost++;
            return 0;
        }
        if (duplicateRate > 0 && random.nextDouble() < duplicateRate) {
            duplicated++;
            return 2;
        }
        return 1;
    }

    /** Whether the next delivered copy is held back so later packets overtake it. */
    public boolean reorder() {
        if (reorderRate > 0 && random.nextDouble() < reorderRate) {
            reordered++;
            return true;
        }
        return false;
    }

    /** A uniform draw in [0, bound), for delays. */
    public long nextLong(final long bound) {
        return bound <= 0 ? 0 : random.nextLong(bound);
    }

    public long seed() {
        return seed;
    }

    public double lossRate() {
        return lossRate;
    }

    public double duplicateRate() {
        return duplicateRate;
    }

    public double reorderRate() {
        return reorderRate;
    }

    public long lost() {
        return lost;
    }

    public long duplicated() {
        return duplicated;
    }

    public long reordered() {
        return reordered;
    }

    @Override
    public String toString() {
        return "faults[seed=" + seed + ", loss=" + lossRate + ", duplicate=" + duplicateRate + ", reorder="
            + reorderRate + "]";
    }
}
