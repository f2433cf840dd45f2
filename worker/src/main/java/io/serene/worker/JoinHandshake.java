package io.serene.worker;

import io.serene.protocol.JoinPacket;
import io.serene.protocol.Status;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The worker's membership in its job: JOIN until the switch accepts (or refuses, or the retry
 * budget is spent), then READY until LEAVE is acknowledged; a JOIN_ACK is checked here (status,
 * the switch's limits). The engine sends what {@link #due} says is due. Rounds submitted while
 * joining are held here: the chunking is known only from the JOIN_ACK.
 */
final class JoinHandshake {
    /** Where the worker stands. */
    enum Phase { JOINING, READY, LEAVING, LEFT, FAILED }

    /** A round submitted before the JOIN_ACK; a null gradient is a skipped round. */
    record EarlyRound(float[] gradient, CompletableFuture<Aggregate> future, long computeNs) {
    }

    private final WorkerContext ctx;
    private final CompletableFuture<Void> joined = new CompletableFuture<>();
    private final CompletableFuture<Void> left = new CompletableFuture<>();
    private Phase phase = Phase.JOINING;
    private long deadlineNs;
    private int attempts;
    private WorkerException failure;
    private final List<EarlyRound> early = new ArrayList<>();

    JoinHandshake(final WorkerContext ctx) {
        this.ctx = ctx;
    }

    Phase phase() {
        return phase;
    }

    CompletableFuture<Void> joined() {
        return joined;
    }

    CompletableFuture<Void> left() {
        return left;
    }

    /** Why the worker failed (null unless FAILED). */
    WorkerException failure() {
        return failure;
    }

    /** Whether a JOIN or LEAVE is due now: {@code -1} if not (wait until {@link #deadlineNs()}), 0 if the budget is spent, 1 if due. */
    int due(final long nowNs) {
        if (nowNs < deadlineNs) {
            return -1;
        }
        return attempts >= ctx.maxJoinAttempts() ? 0 : 1;
    }

    long deadlineNs() {
        return deadlineNs;
    }

    /** Records a JOIN or LEAVE sent now; returns when the next is due. */
    long sent(final long nowNs) {
        attempts++;
        deadlineNs = nowNs + ctx.joinRetryNs();
        return deadlineNs;
    }

    int attempts() {
        return attempts;
    }

    /**
     * Checks a JOIN_ACK: null if it accepts this worker with limits it can work with, else why not
     * (the worker fails with it).
     */
    WorkerException refusal(final JoinPacket in) {
        final Status status = Status.fromCode(in.status());
        if (status != Status.OK) {
            return new WorkerException("switch refused JOIN of worker " + ctx.workerId() + " for job " + ctx.jobId()
                + ": " + status + describe(status));
        }
        final int p = in.poolSize();
        final int k = in.chunkElements();
        final int g = in.roundRing();
        if (p < 1 || k < 1 || k > StepEncoder.MAX_CHUNK_ELEMENTS || g < 2) {
            return new WorkerException("switch sent an invalid JOIN_ACK: pool " + p + ", chunk " + k + ", ring " + g);
        }
        return null;
    }

    /**
     * Whether round {@code round} may be submitted now: in order after the {@code submitted} rounds and
     * those held while joining, and while the worker is in the job; else fails the future, saying why.
     */
    boolean admits(final int round, final int submitted, final CompletableFuture<Aggregate> future) {
        if (phase == Phase.FAILED) {
            future.completeExceptionally(failure());
            return false;
        }
        if (phase == Phase.LEAVING || phase == Phase.LEFT) {
            future.completeExceptionally(new WorkerException("worker " + ctx.workerId() + " has left the job"));
            return false;
        }
        if (round != submitted + held()) {
            future.completeExceptionally(new WorkerException(
                "rounds must be submitted in order without gaps: expected round " + submitted + ", got " + round));
            return false;
        }
        return true;
    }

    /** Holds a round until the JOIN_ACK (the caller passes a copy of the gradient, or null to skip). */
    void hold(final float[] gradient, final CompletableFuture<Aggregate> future, final long computeNs) {
        early.add(new EarlyRound(gradient, future, computeNs));
    }

    /** Rounds held so far. */
    int held() {
        return early.size();
    }

    /** The held rounds, in order, for the engine to submit once joined; holds none after. */
    List<EarlyRound> takeHeld() {
        final List<EarlyRound> rounds = List.copyOf(early);
        early.clear();
        return rounds;
    }

    /** A rebuilt job waits for the other workers: keep joining, the retry budget counted from now. */
    void pending() {
        attempts = 0;
    }

    void ready() {
        phase = Phase.READY;
        joined.complete(null);
    }

    /** Starts leaving (from JOINING or READY); completes at once if there is nothing to leave. */
    CompletableFuture<Void> leave() {
        if (phase == Phase.READY || phase == Phase.JOINING) {
            phase = Phase.LEAVING;
            attempts = 0;
            deadlineNs = 0;
        } else if (phase != Phase.LEAVING) {
            left.complete(null);
        }
        return left;
    }

    /** The switch acknowledged the LEAVE, or the budget is spent. */
    void leftJob() {
        phase = Phase.LEFT;
        left.complete(null);
    }

    void fail(final WorkerException ex) {
        phase = Phase.FAILED;
        failure = ex;
        joined.completeExceptionally(ex);
        left.complete(null);
        for (final EarlyRound round : early) {
            round.future().completeExceptionally(ex);
        }
        early.clear();
    }

    private static String describe(final Status status) {
        switch (status) {
            case TABLE_FULL:
                return " (the switch holds its maximum number of jobs)";
            case SHAPE_MISMATCH:
                return " (the job exists with another worker count or gradient size)";
            case BAD_KEY:
                return " (worker id, worker count or gradient size out of the switch's range)";
            case IN_USE:
                return " (another process holds this worker id in the job: a second worker with the same --id, or one that has not left)";
            case FENCED:
                return " (a newer incarnation of this worker joined the job since: it was restarted while this process was stopped; "
                    + "this one stops, the new one goes on)";
            case BAD_MAC:
                return " (the switch's secret does not give this worker's key: give the workers the switch's secret, the job's, "
                    + "or their own keys from it (serene keys), by --secret-file or SERENE_SECRET)";
            default:
                return "";
        }
    }
}
