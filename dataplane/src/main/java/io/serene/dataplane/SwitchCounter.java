package io.serene.dataplane;

/** Every notable data-plane event; one counter each (see {@link io.serene.protocol.Counters}). */
public enum SwitchCounter {
    PACKETS_IN,
    PACKETS_OUT,
    CONTRIBUTIONS,
    /** A worker's report of its compute time for a round released without it (DATA with flag REPORT): telemetry only. */
    REPORTS,
    VALUE_CONTRIBUTIONS,
    RELEASES,
    PARTIAL_RELEASES,
    TIMEOUT_RELEASES,
    CONFIG_INSTALLS,
    CONFIG_REQUESTS,
    RESULTS_MULTICAST,
    RESULTS_RETRANSMITTED,
    DUPLICATES,
    OVERFLOWS,
    JOINS,
    LEAVES,
    JOBS_CREATED,
    JOBS_FREED,
    /** A job freed because none of its joined workers was heard from for the job lease. */
    JOBS_EXPIRED,
    /** A live job formed anew from its workers' checkpoints, after a REBUILD JOIN of a worker back from a checkpoint. */
    JOBS_REBUILT,
    /** A JOIN of an older incarnation of a worker than one that joined already (a stopped process resumed): refused FENCED. */
    JOINS_FENCED,
    DROP_TRUNCATED,
    DROP_BAD_MAGIC,
    DROP_BAD_VERSION,
    DROP_BAD_TYPE,
    DROP_BAD_LENGTH,
    DROP_UNEXPECTED_TYPE,
    DROP_UNKNOWN_JOB,
    DROP_BAD_WORKER,
    DROP_NOT_JOINED,
    /** A packet naming a joined worker, from an address other than the one it joined from. */
    DROP_FOREIGN_PORT,
    /** A packet whose MAC is not its worker's (a sender without the worker's key: forged, altered, or a stray). */
    DROP_BAD_MAC,
    /** A packet whose number its worker's replay window took already, or one too far behind (a replay). */
    DROP_REPLAYED,
    /** A joined worker that joined again from another address, signed with its key (a new incarnation). */
    REBINDS,
    DROP_BAD_ELEMENT_COUNT,
    DROP_BAD_SLOT,
    DROP_INCONSISTENT,
    /** A DATA whose round is not its seq's (StepLayout): it may claim no slot. */
    DROP_BAD_STEP,
    /** A DATA with an exponent outside the block floating point range (its look-ahead field or an exponent step's values). */
    DROP_BAD_EXPONENT,
    DROP_AHEAD,
    DROP_BEYOND_BOUND,
    DROP_STALE,
    DROP_LATE,
    JOIN_REFUSED,
    ERRORS
}
