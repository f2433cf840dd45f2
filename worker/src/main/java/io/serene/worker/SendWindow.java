package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.Outbox;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.RttEstimator;

import java.util.Arrays;

/**
 * The worker's own steps in flight and their loss recovery: a self-clocked window over the
 * switch's pool (registers indexed by {@code seq & mask}), RTT sampling, fast retransmission,
 * a tail loss probe, timeouts with backoff, resends clocked by the results of resent steps, and
 * the switch's word that it holds a step already (NACK HELD). The engine decides what to send
 * next; this block decides when a sent step must go again, and asks the {@link Resender} to send it.
 */
final class SendWindow {
    /** Results this many steps ahead of a pending step mark it lost. */
    private static final int REORDER_THRESHOLD = 3;
    /** Steps resent per timeout event; the rest of the expired steps wait another timeout. */
    private static final int MAX_RESENDS_PER_TIMEOUT = 4;
    /** Steps resent for each result of a step a timeout or this recovery resent, unless held: it doubles each round trip. */
    private static final int RESENDS_PER_RECOVERED = 2;
    /** Shortest tail probe: below this a probe would mostly resend steps still on their way. */
    private static final long MIN_PROBE_NS = 200_000L;

    /** Sends a step again, for the window. */
    interface Resender {
        /** Whether the step still needs its result (false once its round was delivered). */
        boolean needsResult(long seq);

        void resend(long seq, Outbox outbox);
    }

    private final Counters<WorkerCounter> counters;
    private final RttEstimator rtt;
    private final Resender resender;
    private int window;
    private int mask;
    private long[] entrySeq;
    private boolean[] entryDone;
    /** The switch answered a resend of the step HELD: it has this worker's part, the step waits for peers. */
    private boolean[] entryHeld;
    /** The step went again by a timeout or by {@link #resendClocked}: its result clocks the recovery on. */
    private boolean[] entryRecovering;
    private long[] entrySentNs;
    private long[] entrySendStamp;
    private long[] entryDeadlineNs;
    private int[] entryRetries;
    private long sendStamp;
    private long tailProbeArmedAt = -1;
    private long minRttNs = Long.MAX_VALUE / 8;
    /** The next step to send, and the oldest not yet answered. */
    private long nextSeq;
    private long oldestSeq;
    private long earliestDeadlineNs = PacketEndpoint.NO_DEADLINE;
    /** Loss-recovery hint from the latest result: the job's lowest open step, and whether the switch has ours. */
    private long openSeq = -1;
    private boolean openHasMine;
    /** The first step still missing its result that the switch answered STALE (-1: none), and when. */
    private long staleSeq = -1;
    private long staleAtNs;

    SendWindow(final Counters<WorkerCounter> counters, final RttEstimator rtt, final Resender resender) {
        this.counters = counters;
        this.rtt = rtt;
        this.resender = resender;
    }

    /** Sizes the window (steps in flight at most) once the pool is known. */
    void allocate(final int steps) {
        window = steps;
        final int entries = Integer.highestOneBit(Math.max(1, steps - 1)) << 1;
        mask = entries - 1;
        entrySeq = new long[entries];
        entryDone = new boolean[entries];
        entryHeld = new boolean[entries];
        entryRecovering = new boolean[entries];
        entrySentNs = new long[entries];
        entrySendStamp = new long[entries];
        entryDeadlineNs = new long[entries];
        entryRetries = new int[entries];
        Arrays.fill(entrySeq, -1L);
    }

    long nextSeq() {
        return nextSeq;
    }

    long oldestSeq() {
        return oldestSeq;
    }

    long earliestDeadlineNs() {
        return earliestDeadlineNs;
    }

    /** Whether sending the next step would exceed the window. */
    boolean full() {
        return nextSeq - oldestSeq >= window;
    }

    /** Passes the next step, released without this worker; false if its register is still taken. */
    boolean skipNext() {
        final long seq = nextSeq;
        if (seq - oldestSeq >= mask + 1) {
            return false;
        }
        final int e = (int) seq & mask;
        entrySeq[e] = seq;
        entryDone[e] = true;
        if (oldestSeq == seq) {
            oldestSeq++;
        }
        nextSeq++;
        return true;
    }

    /** Records the next step as sent now (the caller sends it). */
    long sendNext(final long nowNs) {
        final long seq = nextSeq;
        final int e = (int) seq & mask;
        entrySeq[e] = seq;
        entryDone[e] = false;
        entryHeld[e] = false;
        entryRecovering[e] = false;
        entryRetries[e] = 0;
        entrySentNs[e] = nowNs;
        entrySendStamp[e] = ++sendStamp;
        entryDeadlineNs[e] = nowNs + rtt.rtoNs();
        earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
        nextSeq++;
        return seq;
    }

    /** A result's loss-recovery hint: the job's lowest open step, and whether the switch holds this worker's part of it. */
    void hint(final long open, final boolean hasMine) {
        openSeq = open;
        openHasMine = hasMine;
    }

    /** The result of step seq arrived: if it is an own step in flight, sample the RTT and look for losses before it. */
    void onResult(final long seq, final long nowNs, final Outbox outbox) {
        if (inFlight(seq)) {
            final int e = (int) seq & mask;
            entryDone[e] = true;
            if (entryRetries[e] == 0) {
                counters.increment(WorkerCounter.RTT_SAMPLES);
                rtt.sample(nowNs - entrySentNs[e]);
                minRttNs = Math.min(minRttNs, nowNs - entrySentNs[e]);
            }
            fastRetransmit(seq, entrySendStamp[e], nowNs, outbox);
            if (entryRecovering[e] && !entryHeld[e]) {
                resendClocked(entrySendStamp[e], nowNs, outbox);
            }
            advanceOldest();
        }
    }

    /**
     * The switch answered a resend of step seq HELD: it has this worker's part and waits for peers'.
     * The step is not fast-retransmitted while it is open ({@link #heldOpen}) and its result clocks
     * no further resends; its timeout stands (its result may still be lost).
     */
    void onHeld(final long seq) {
        if (inFlight(seq)) {
            entryHeld[(int) seq & mask] = true;
            counters.increment(WorkerCounter.HELD_STEPS);
        }
    }

    /**
     * Recovery clocked by results (TCP's slow start after a timeout): the result of a step resent
     * by a timeout or by this recovery, and not answered HELD (the switch had this worker's part),
     * came back while the step was still missing it, so the resend brought it (a lost contribution
     * or a lost result); up to {@link #RESENDS_PER_RECOVERED} more pending steps, sent before it and
     * at least a retransmission timeout ago (not merely waiting for a slower peer), go again, oldest
     * first. A burst lost at a round's tail, where no later result can reveal it, is then resent in
     * a few round trips rather than {@link #MAX_RESENDS_PER_TIMEOUT} steps a backed-off timeout.
     * Fast retransmissions do not clock it (a loss in mid-round is found by the results after it),
     * and a resend that was not needed is answered HELD, or its result finds the step done, and
     * clocks nothing.
     */
    private void resendClocked(final long stamp, final long nowNs, final Outbox outbox) {
        int resent = 0;
        for (long s = oldestSeq; s < nextSeq && resent < RESENDS_PER_RECOVERED; s++) {
            final int e = (int) s & mask;
            if (entryDone[e] || entryHeld[e] || entrySendStamp[e] >= stamp || nowNs - entrySentNs[e] < rtt.rtoNs()) {
                continue;
            }
            if (heldOpen(s, e)) {
                counters.increment(WorkerCounter.RESENDS_AVOIDED);
                entrySendStamp[e] = ++sendStamp;
                continue;
            }
            resend(s, e, nowNs, outbox);
            entryRecovering[e] = true;
            counters.increment(WorkerCounter.RECOVERY_RESENDS);
            resent++;
        }
    }

    /**
     * The switch answered step seq with NACK STALE: its registers went on to a later step, so the
     * step's result, if this worker still misses it, can only be on its way already. The first
     * such step is watched ({@link #lostSeq}).
     */
    void onStale(final long seq, final long nowNs) {
        if (staleSeq < 0 && missing(seq)) {
            staleSeq = seq;
            staleAtNs = nowNs;
        }
    }

    /**
     * A step whose result is gone: the switch answered it STALE the longest retransmission timeout
     * ago or more (the result may trail the NACK, reordered, but not by longer than the loss
     * recovery ever waits for a packet) and it has not come since (-1: none). No resend can bring it back.
     */
    long lostSeq(final long nowNs) {
        if (staleSeq >= 0 && !missing(staleSeq)) {
            staleSeq = -1;
        }
        return staleSeq >= 0 && nowNs >= staleDeadlineNs() ? staleSeq : -1;
    }

    /** When a step answered STALE, if its result is still missing then, is taken for lost. */
    long staleDeadlineNs() {
        return staleSeq < 0 ? PacketEndpoint.NO_DEADLINE : staleAtNs + rtt.maxRtoNs();
    }

    /** Whether step seq was sent and its result is still missing and needed. */
    private boolean missing(final long seq) {
        return seq >= oldestSeq && inFlight(seq) && resender.needsResult(seq);
    }

    /** Whether step seq is an own step sent and not answered yet. */
    private boolean inFlight(final long seq) {
        final int e = (int) seq & mask;
        return seq < nextSeq && entrySeq[e] == seq && !entryDone[e];
    }

    /** Moves the oldest pending step past every answered one. */
    private void advanceOldest() {
        while (oldestSeq < nextSeq && entryDone[(int) oldestSeq & mask]) {
            oldestSeq++;
        }
    }

    /**
     * Loss detection ahead of the timeout (TCP's duplicate-acknowledgement threshold, with RACK's
     * send-time check): when the result of step x arrives, a step at least
     * {@link #REORDER_THRESHOLD} below x that is still pending and was last sent before x (by send
     * order, not clock: a burst shares one timestamp) is presumed lost and sent again. Steps go out
     * in order and the switch releases them in order,
     * so this rarely fires spuriously; a step resent after x was sent is left alone, and so is one
     * resent less than a smoothed RTT ago (its resend is on its way), so each loss is resent at most
     * once per round trip. A worker cannot tell its own loss from a peer's until the switch answers
     * HELD ({@link #heldOpen}); until then every worker resends and the switch absorbs the duplicates.
     */
    private void fastRetransmit(final long seq, final long stamp, final long nowNs, final Outbox outbox) {
        for (long s = oldestSeq; s <= seq - REORDER_THRESHOLD; s++) {
            final int e = (int) s & mask;
            if (!entryDone[e] && entrySendStamp[e] < stamp && (entryRetries[e] == 0 || nowNs - entrySentNs[e] >= rtt.srttNs())) {
                if (heldOpen(s, e)) {
                    // the switch holds this worker's contribution and the step is still open: the loss is a peer's
                    counters.increment(WorkerCounter.RESENDS_AVOIDED);
                    entrySendStamp[e] = ++sendStamp;
                    continue;
                }
                resend(s, e, nowNs, outbox);
                counters.increment(WorkerCounter.FAST_RETRANSMISSIONS);
            }
        }
    }

    /**
     * Whether the switch holds this worker's part of step seq and the step is still open, so a
     * resend could only be a duplicate: the latest result's hint says so of the job's lowest open
     * step, and a HELD answer of a later one until the lowest open step passes it (then its result
     * to this worker was lost, and a resend brings it back).
     */
    private boolean heldOpen(final long seq, final int e) {
        return seq == openSeq ? openHasMine : entryHeld[e] && seq > openSeq;
    }

    private void resend(final long seq, final int e, final long nowNs, final Outbox outbox) {
        if (!resender.needsResult(seq)) {
            // the round was delivered (its chunks all released) while this step's result was lost:
            // nothing left to recover; the window moves on past it
            entryDone[e] = true;
            advanceOldest();
            return;
        }
        entryRetries[e]++;
        entryHeld[e] = false;
        entryRecovering[e] = false;
        entrySentNs[e] = nowNs;
        entrySendStamp[e] = ++sendStamp;
        entryDeadlineNs[e] = nowNs + rtt.backedOffRtoNs(entryRetries[e]);
        earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
        resender.resend(seq, outbox);
    }

    /**
     * Tail loss probe (after TCP's TLP, RFC 8985): once every submitted step is sent, no later
     * result can reveal a loss among the last steps, and the timeout, with four deviations on top,
     * is long. So the pending steps get a probe deadline of twice the smoothed RTT (RFC 8985's PTO;
     * before any sample four times the smallest RTT seen; at least {@link #MIN_PROBE_NS}) instead.
     * The smoothed RTT, not the smallest: a step's result waits for its slowest peer's
     * contribution, and a probe sized for an unloaded round trip resends steps that were never
     * lost whenever the peers send later than this worker. Armed once per drain.
     */
    void armTailProbe(final long nowNs) {
        if (tailProbeArmedAt == nextSeq || oldestSeq == nextSeq) {
            return;
        }
        tailProbeArmedAt = nextSeq;
        final long probeNs = Math.max(MIN_PROBE_NS, rtt.srttNs() > 0 ? 2 * rtt.srttNs() : 4 * minRttNs);
        for (long seq = oldestSeq; seq < nextSeq; seq++) {
            final int e = (int) seq & mask;
            if (!entryDone[e] && entryRetries[e] == 0) {
                entryDeadlineNs[e] = Math.min(entryDeadlineNs[e], Math.max(nowNs, entrySentNs[e] + probeNs));
                earliestDeadlineNs = Math.min(earliestDeadlineNs, entryDeadlineNs[e]);
            }
        }
    }

    /**
     * Timeout recovery: resends at most {@link #MAX_RESENDS_PER_TIMEOUT} expired steps, oldest
     * first, and pushes the other expired steps back by the backed-off timeout. After a stall of
     * the whole pipeline (a pause of this process, say) every step in flight has expired at once,
     * and resending all of them would only add duplicates; real losses among them are found by
     * {@link #fastRetransmit} as results flow again, or by a later timeout.
     */
    void retransmit(final long nowNs, final Outbox outbox) {
        long earliest = PacketEndpoint.NO_DEADLINE;
        int resent = 0;
        for (long seq = oldestSeq; seq < nextSeq; seq++) {
            final int e = (int) seq & mask;
            if (entryDone[e]) {
                continue;
            }
            if (entryDeadlineNs[e] <= nowNs) {
                if (resent < MAX_RESENDS_PER_TIMEOUT) {
                    resend(seq, e, nowNs, outbox);
                    entryRecovering[e] = true;
                    counters.increment(WorkerCounter.RETRANSMISSIONS);
                    resent++;
                } else {
                    entryDeadlineNs[e] = nowNs + rtt.backedOffRtoNs(entryRetries[e] + 1);
                }
            }
            earliest = Math.min(earliest, entryDeadlineNs[e]);
        }
        earliestDeadlineNs = earliest;
    }
}
