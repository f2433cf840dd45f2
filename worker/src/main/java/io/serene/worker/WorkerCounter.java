package io.serene.worker;

/** Every notable event of a worker engine. */
public enum WorkerCounter {
    PACKETS_IN,
    PACKETS_OUT,
    STEPS_SENT,
    RETRANSMISSIONS,
    FAST_RETRANSMISSIONS,
    RESENDS_AVOIDED,
    RESULTS,
    DUPLICATE_RESULTS,
    NACKS,
    SATURATED_VALUES,
    JOIN_ATTEMPTS,
    ROUNDS_COMPLETED,
    DROP_MALFORMED,
    DROP_UNEXPECTED,
    RTT_SAMPLES,
    ERRORS
}
