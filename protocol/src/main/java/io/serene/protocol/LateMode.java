package io.serene.protocol;

/** What happens to a contribution that reaches the switch after its chunk was released. */
public enum LateMode {
    /** Counted and reported to its worker, then discarded. */
    DROP,
    /** Reported to its worker, which adds it to its next round's gradient: no gradient is lost. */
    FOLD
}
