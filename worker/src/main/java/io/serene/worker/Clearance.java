package io.serene.worker;

import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * When this worker may start a round: it holds the current config table and R &gt;= round - s - 1
 * for the bound s in force for that round, at most the release ring ahead of R ({@link SyncRules}).
 * Tracks R as results report it and completes the callers waiting for a round once it is cleared.
 */
final class Clearance {
    /** A caller waiting until the worker may start computing a round, or (a sit-out) only until R reaches it. */
    private record Waiter(int round, boolean releaseOnly, CompletableFuture<Void> future) {
    }

    private final ConfigReplica config;
    private final List<Waiter> waiters = new ArrayList<>();
    private int releasedRound = -1;
    /** When R last advanced, as this worker heard it (the engine's clock). */
    private long releasedAtNs;
    /** The newest round a result showed released without this worker (-1: none). */
    private int leftOutRound = -1;
    private int ring;

    Clearance(final ConfigReplica config) {
        this.config = config;
    }

    /** The switch's release ring, from the JOIN_ACK. */
    void ring(final int roundRing) {
        this.ring = roundRing;
    }

    /** The highest round R with every round up to it released, as this worker last heard. */
    int releasedRound() {
        return releasedRound;
    }

    /** A result of {@code round} left this worker out. */
    void leftOut(final int round) {
        leftOutRound = Math.max(leftOutRound, round);
    }

    int leftOutRound() {
        return leftOutRound;
    }

    /** When R last advanced, as this worker heard it. */
    long releasedAtNs() {
        return releasedAtNs;
    }

    /** R as a result heard at {@code nowNs} reports it (results may arrive out of order: R never goes back). */
    void released(final int round, final long nowNs) {
        if (round > releasedRound) {
            releasedRound = round;
            releasedAtNs = nowNs;
        }
    }

    /** Whether a result for this round can be one of the job's: the switch releases nothing beyond R + ring. */
    boolean plausible(final int round) {
        return round <= SyncRules.highestStartable(releasedRound, SyncConfig.UNBOUNDED, ring) + 1;
    }

    boolean cleared(final int round) {
        return config.cleared(round, releasedRound, ring);
    }

    /** A future completed once the round is cleared; {@code ready} says whether the worker has joined. */
    CompletableFuture<Void> await(final int round, final boolean ready) {
        final CompletableFuture<Void> future = new CompletableFuture<>();
        if (ready && cleared(round)) {
            future.complete(null);
        } else {
            waiters.add(new Waiter(round, false, future));
        }
        return future;
    }

    /**
     * {@link SyncRules#sitsOut} for open round {@code round} at {@code nowNs}, under the round's
     * timeout, in a job whose last round is {@code lastRound}: completes with true once the round it
     * sits out is released (R reaches it), or at once with false.
     */
    CompletableFuture<Boolean> sitOut(final int round, final long nowNs, final long timeoutNs, final int lastRound) {
        if (!SyncRules.sitsOut(round, releasedRound, leftOutRound, releasedAtNs, nowNs, timeoutNs, lastRound)) {
            return CompletableFuture.completedFuture(false);
        }
        final CompletableFuture<Void> released = new CompletableFuture<>();
        waiters.add(new Waiter(round, true, released));
        return released.thenApply(v -> true);
    }

    /** Completes the waiters whose rounds are cleared (or released, for a sit-out) now. */
    void wake() {
        if (waiters.isEmpty()) {
            return;
        }
        final Iterator<Waiter> it = waiters.iterator();
        while (it.hasNext()) {
            final Waiter waiter = it.next();
            if (waiter.releaseOnly() ? waiter.round() <= releasedRound : cleared(waiter.round())) {
                it.remove();
                waiter.future().complete(null);
            }
        }
    }

    void fail(final Throwable cause) {
        for (final Waiter waiter : waiters) {
            waiter.future().completeExceptionally(cause);
        }
        waiters.clear();
    }
}
