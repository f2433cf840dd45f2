package io.serene.protocol;

import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/**
 * A fixed set of event counters, one per constant of an enum, written by one thread.
 * Reads from other threads see eventually consistent values.
 */
public final class Counters<E extends Enum<E>> {
    private final Class<E> type;
    private final long[] values;

    public Counters(final Class<E> type) {
        this.type = type;
        this.values = new long[type.getEnumConstants().length];
    }

    public void increment(final E counter) {
        values[counter.ordinal()]++;
    }

    public void add(final E counter, final long delta) {
        values[counter.ordinal()] += delta;
    }

    public long get(final E counter) {
        return values[counter.ordinal()];
    }

    /** A copy of every counter, in declaration order. */
    public Map<E, Long> snapshot() {
        final Map<E, Long> map = new EnumMap<>(type);
        for (final E e : type.getEnumConstants()) {
            map.put(e, values[e.ordinal()]);
        }
        return map;
    }

    /** The non-zero counters as {@code name=value} pairs. */
    @Override
    public String toString() {
        final StringBuilder sb = new StringBuilder();
        for (final E e : type.getEnumConstants()) {
            final long v = values[e.ordinal()];
            if (v != 0) {
                if (sb.length() > 0) {
                    sb.append(", ");
                }
                sb.append(e.name().toLowerCase(Locale.ROOT)).append('=').append(v);
            }
        }
        return sb.toString();
    }
}
