package io.serene.worker;

import io.serene.protocol.Packet;

/**
 * A worker could not do what was asked: the switch refused it, did not answer, or the call was
 * invalid; {@link #lost()} says whether it lost the job or its place in it, from which the caller
 * may join again from checkpoints.
 */
public final class WorkerException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What a worker lost that joining again from checkpoints can bring back. */
    public enum Lost {
        /** Nothing of the kind: the failure is of another sort. */
        NOTHING,
        /**
         * The job: the switch no longer has it (it restarted, the job's lease ran out, or a worker back
         * from a checkpoint rebuilds it); every worker joins again, offering its own checkpoints.
         */
        JOB,
        /**
         * Its place in the job: the job went on past rounds whose results this worker never got; it
         * joins again as a restarted worker does, from the newest checkpoint any worker holds.
         */
        PLACE
    }

    private final Lost lost;

    public WorkerException(final String message) {
        this(message, Lost.NOTHING);
    }

    public WorkerException(final String message, final Lost lost) {
        super(message);
        this.lost = lost;
    }

    /** A newer incarnation of the worker joined the job (it was restarted while this process was stopped). */
    static WorkerException fenced(final int worker) {
        return new WorkerException("worker " + worker + " was fenced: a newer incarnation of it joined the job "
            + "since (it was restarted while this process was stopped); this one stops, the new one goes on");
    }

    /** The switch no longer has the job. */
    static WorkerException jobGone(final int job) {
        return new WorkerException("the switch has no job " + job + " any more (it restarted, the job's lease "
            + "ran out, or a worker back from a checkpoint rebuilds it): the aggregates in flight are gone; go on from "
            + "the workers' checkpoints (serene worker --checkpoint-every rejoins by itself; else --resume-after N)", Lost.JOB);
    }

    /** The job reused the registers of step {@code seq} (of round {@code round}) before the worker had its result. */
    static WorkerException fellBehind(final int worker, final int job, final long seq, final int round) {
        return new WorkerException("worker " + worker + " fell too far behind job " + job
            + ": the switch reused the registers of its step " + seq + " (round " + round
            + ") before this worker had the result (NACK STALE), and the job went on without it; it can only join "
            + "again from the workers' checkpoints (serene worker --checkpoint-every does by itself; else restart it "
            + "with --rejoin)", Lost.PLACE);
    }

    /** No JOIN_ACK after every attempt: with the likely causes ({@code badMacs} packets from the switch failed the MAC). */
    static WorkerException joinUnanswered(final int worker, final int job, final int attempts, final long badMacs, final boolean keyed) {
        return new WorkerException("switch did not answer JOIN of worker " + worker + " for job " + job + " after " + attempts
            + " attempts" + (badMacs > 0
            ? " (" + badMacs + " packets from its address failed the job's reply MAC: the switch holds another secret, or none)"
            : keyed ? "" : " (a switch with a secret drops unsigned packets unanswered: give this worker its key, "
                + "the job's secret or the switch's, by --secret-file or SERENE_SECRET)")
            + "; a switch of another Serene version (this worker speaks protocol " + Packet.VERSION + ") drops them too");
    }

    /** What the worker lost that a REBUILD JOIN from checkpoints can bring back. */
    public Lost lost() {
        return lost;
    }
}
