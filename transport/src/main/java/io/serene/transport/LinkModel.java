package io.serene.transport;

import io.serene.protocol.Units;

import java.util.Locale;

/**
 * A modelled access link (serene worker --link-rate, --link-delay, --link-loss): its rate in bits per second,
 * its one-way propagation delay, and the share of the packets the worker sends that it loses (seeded per
 * worker; with or without a modelled rate). {@link #NONE}: the host's own link, unmodelled, lossless.
 */
public record LinkModel(long bitsPerSecond, long delayNs, double loss) {
    /** No modelled link. */
    public static final LinkModel NONE = new LinkModel(0, 0);

    /** A lossless link. */
    public LinkModel(final long bitsPerSecond, final long delayNs) {
        this(bitsPerSecond, delayNs, 0);
    }

    public LinkModel {
        if (!(loss >= 0 && loss < 0.5)) {
            throw new IllegalArgumentException("--link-loss must be in [0, 0.5), was " + loss);
        }
        if (bitsPerSecond < 0 || delayNs < 0) {
            throw new IllegalArgumentException("a link's rate and delay must be >= 0, were " + bitsPerSecond + " bit/s and " + delayNs + " ns");
        }
        if (bitsPerSecond == 0 && delayNs > 0) {
            throw new IllegalArgumentException("--link-delay needs --link-rate: a delay on an unmodelled link models nothing");
        }
    }

    /** Parses a rate ("0": none; 100mbit) and a delay (0, 50us); errors name the flags. */
    public static LinkModel parse(final String rate, final String delay) {
        final long bits = rate.trim().equals("0") ? 0 : Units.bitsPerSecond("--link-rate", rate);
        final long ns = delay.trim().equals("0") ? 0 : Units.durationNs("--link-delay", delay);
        return new LinkModel(bits, ns);
    }

    /** The same link losing {@code rate} of the packets sent over it. */
    public LinkModel withLoss(final double rate) {
        return new LinkModel(bitsPerSecond, delayNs, rate);
    }

    /** The loss this link injects into worker {@code worker}'s sends (seeded by it), none if lossless. */
    public FaultInjector faults(final long worker) {
        return loss > 0 ? new FaultInjector(0x5EED_1055L + worker, loss, 0, 0) : FaultInjector.none();
    }

    /** Whether a link is modelled. */
    public boolean modelled() {
        return bitsPerSecond > 0;
    }

    /** The time {@code bytes} take on the link at its rate (serialization), in nanoseconds. */
    public long serializationNs(final int bytes) {
        return bytes * 8_000_000_000L / bitsPerSecond;
    }

    /** The rate as --link-rate takes it. */
    public String rateText() {
        if (bitsPerSecond == 0) {
            return "0";
        }
        return bitsPerSecond % 1_000_000_000L == 0 ? bitsPerSecond / 1_000_000_000L + "gbit"
            : bitsPerSecond % 1_000_000L == 0 ? bitsPerSecond / 1_000_000L + "mbit"
            : String.format(Locale.ROOT, "%skbit", bitsPerSecond / 1e3);
    }

    /** The delay as --link-delay takes it. */
    public String delayText() {
        return delayNs == 0 ? "0" : delayNs % 1_000 == 0 ? delayNs / 1_000 + "us" : delayNs + "ns";
    }

    @Override
    public String toString() {
        return (modelled() ? rateText() + ", " + delayText() + " delay" : "unmodelled") + (loss > 0 ? ", " + loss + " loss" : "");
    }
}
