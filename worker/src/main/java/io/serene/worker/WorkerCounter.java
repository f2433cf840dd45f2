package io.serene.worker;

/** Every notable event of a worker engine. */
public enum WorkerCounter {
    PACKETS_IN,
    PACKETS_OUT,
    STEPS_SENT,
    STEPS_SKIPPED,
    /** Reports of this worker's compute time for a round released without it (so the switch hears it while it is left out). */
    REPORTS_SENT,
    RETRANSMISSIONS,
    FAST_RETRANSMISSIONS,
    RESENDS_AVOIDED,
    /** Steps the switch answered HELD: it holds this worker's part, so they are not fast-retransmitted while open. */
    HELD_STEPS,
    /** Steps resent because the result of a resent step came back (recovery clocked by results, after TCP's slow start). */
    RECOVERY_RESENDS,
    RESULTS,
    DUPLICATE_RESULTS,
    NACKS,
    SATURATED_VALUES,
    JOIN_ATTEMPTS,
    ROUNDS_COMPLETED,
    INCLUDED_CHUNKS,
    FOLDED_CHUNKS,
    DROPPED_CHUNKS,
    CONFIG_UPDATES,
    CONFIG_REQUESTS,
    DROP_MALFORMED,
    /** A packet from another source than the worker's switch. */
    DROP_FOREIGN,
    /** A packet from the switch's address without the job's reply MAC (a spoofed source, a stray of another job, a switch with another secret). */
    DROP_BAD_MAC,
    /** A packet from the switch whose number the replay window took already, is too old, or came before a fresh JOIN_ACK. */
    DROP_REPLAYED,
    DROP_UNEXPECTED,
    RTT_SAMPLES,
    ERRORS
}
