package io.serene.protocol;

import java.util.Locale;

/**
 * Durations and rates as a user writes them ({@code 40ms}, {@code 100mbit}), parsed in one place
 * for every flag and key that takes one; errors name the setting.
 */
public final class Units {
    private static final String[] TIME_UNITS = {"ns", "us", "ms", "s"};
    private static final double[] NS_PER_UNIT = {1, 1e3, 1e6, 1e9};
    private static final String[] RATE_UNITS = {"kbit", "mbit", "gbit"};
    private static final double[] BITS_PER_UNIT = {1e3, 1e6, 1e9};

    private Units() {
    }

    /** A duration of at most an hour with its unit (ns, us, ms or s), in nanoseconds; {@code what} names the setting. */
    public static long durationNs(final String what, final String text) {
        final double ns = scaled(text, TIME_UNITS, NS_PER_UNIT);
        if (!(ns >= 0) || ns > 3.6e12) {
            throw new IllegalArgumentException(what + ": '" + text + "' is not a duration of at most an hour with a unit (ns, us, ms "
                + "or s), as in 40ms");
        }
        return Math.round(ns);
    }

    /** A link rate with its unit (kbit, mbit or gbit, per second), in bits per second; {@code what} names the setting. */
    public static long bitsPerSecond(final String what, final String text) {
        final double bits = scaled(text, RATE_UNITS, BITS_PER_UNIT);
        if (!(bits >= 1e3) || bits > 1e13) {
            throw new IllegalArgumentException(what + ": '" + text + "' is not a rate from 1kbit to 10000gbit (per second) with a unit "
                + "(kbit, mbit or gbit), as in 100mbit");
        }
        return Math.round(bits);
    }

    /** The number before one of {@code units}, times its factor; NaN if the text is not of that form. */
    private static double scaled(final String text, final String[] units, final double[] factors) {
        final String t = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
        // the longest unit that ends the text ("ms" before "s")
        int best = -1;
        for (int i = 0; i < units.length; i++) {
            if (t.endsWith(units[i]) && (best < 0 || units[i].length() > units[best].length())) {
                best = i;
            }
        }
        if (best < 0) {
            return Double.NaN;
        }
        try {
            return Double.parseDouble(t.substring(0, t.length() - units[best].length()).trim()) * factors[best];
        } catch (final NumberFormatException ex) {
            return Double.NaN;
        }
    }
}
