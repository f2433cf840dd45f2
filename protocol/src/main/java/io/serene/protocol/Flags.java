package io.serene.protocol;

/** Bits of the header's flags field. */
public final class Flags {
    /** DATA / RESULT: the packet carries values (otherwise it carries only an exponent). */
    public static final int VALUES = 1;
    /** DATA: the worker clamped some values to fit the agreed scale. RESULT: a sum saturated. */
    public static final int SATURATED = 2;
    /** RESULT: a unicast re-send to a worker that retransmitted after the release. */
    public static final int RETRANSMIT = 4;

    private Flags() {
    }
}
