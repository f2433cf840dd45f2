package io.serene.protocol.sync;

/**
 * What happens to a contribution that reaches the switch after its chunk was released. Each mode
 * has a fixed wire code (the CONFIG packet's late-mode field), independent of declaration order.
 */
public enum LateMode {
    /** Counted and reported to its worker, then discarded. */
    DROP(0),
    /** Reported to its worker, which adds it to its next round's gradient: no gradient is lost. */
    FOLD(1);

    private final int wireCode;

    LateMode(final int wireCode) {
        this.wireCode = wireCode;
    }

    /** The code this mode has on the wire. */
    public int wireCode() {
        return wireCode;
    }

    /** Whether a code names a mode. */
    public static boolean isWireCode(final int code) {
        return code == 0 || code == 1;
    }

    /** The mode of a wire code; an unknown code is refused. */
    public static LateMode fromWireCode(final int code) {
        switch (code) {
            case 0:
                return DROP;
            case 1:
                return FOLD;
            default:
                throw new IllegalArgumentException("unknown late mode code " + code);
        }
    }
}
