package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.Outbox;
import io.serene.protocol.RttEstimator;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.StepLayout;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The worker's blocks one at a time, with a fake clock (in the style of a loss-detector test). */
class WorkerBlocksTest {
    private static final long MS = 1_000_000L;
    private static final Outbox NOWHERE = (port, buffer, offset, length) -> { };

    private final Counters<WorkerCounter> counters = new Counters<>(WorkerCounter.class);
    private final List<Long> resent = new ArrayList<>();
    private final SendWindow window = new SendWindow(counters, new RttEstimator(10 * MS, MS, 1000 * MS), new SendWindow.Resender() {
        @Override
        public boolean needsResult(final long seq) {
            return true;
        }

        @Override
        public void resend(final long seq, final Outbox outbox) {
            resent.add(seq);
        }
    });

    /** Sizes the window and sends its first {@code steps} steps at time 0. */
    private void sentAtZero(final int window, final int steps) {
        this.window.allocate(window);
        for (int i = 0; i < steps; i++) {
            this.window.sendNext(0);
        }
    }

    @Test
    void shouldResendAStepOnceThreeLaterResultsArrived() {
        sentAtZero(8, 5);
        window.onResult(1, MS, NOWHERE);
        window.onResult(2, MS, NOWHERE);
        assertThat(resent).isEmpty();
        window.onResult(3, MS, NOWHERE);
        // step 0 was sent before step 3 and is still pending: presumed lost
        assertThat(resent).containsExactly(0L);
        assertThat(counters.get(WorkerCounter.FAST_RETRANSMISSIONS)).isEqualTo(1);
        // not again for the next result: it was resent after step 4 was sent
        window.onResult(4, MS, NOWHERE);
        assertThat(resent).containsExactly(0L);
        assertThat(window.oldestSeq()).isZero();
    }

    @Test
    void shouldNotResendWhenTheSwitchHoldsThisWorkersPartOfTheOpenStep() {
        sentAtZero(8, 4);
        window.hint(0, true);
        window.onResult(3, MS, NOWHERE);
        assertThat(resent).isEmpty();
        assertThat(counters.get(WorkerCounter.RESENDS_AVOIDED)).isEqualTo(1);
    }

    @Test
    void shouldProbeTheTailAndThenTimeOutWithBackoff() {
        window.allocate(8);
        window.sendNext(0);
        window.sendNext(0);
        window.onResult(0, 2 * MS, NOWHERE);
        // both sent: the last step gets a probe deadline of twice the smoothed RTT (one sample: 2 ms) instead of the RTO
        window.armTailProbe(2 * MS);
        assertThat(window.earliestDeadlineNs()).isEqualTo(4 * MS);
        window.retransmit(4 * MS, NOWHERE);
        assertThat(resent).containsExactly(1L);
        assertThat(counters.get(WorkerCounter.RETRANSMISSIONS)).isEqualTo(1);
        assertThat(window.earliestDeadlineNs()).isGreaterThan(4 * MS + 10 * MS);
    }

    @Test
    void theTailProbeWaitsTwiceTheSmoothedRttNotFourUnloadedOnes() {
        window.allocate(8);
        window.sendNext(0);
        window.sendNext(0);
        // one result came back at once (1 ms), one waited for a slower peer (25 ms): smoothed RTT (7 x 1 + 25) / 8 = 4 ms
        window.onResult(0, MS, NOWHERE);
        window.onResult(1, 25 * MS, NOWHERE);
        window.sendNext(25 * MS);
        window.armTailProbe(25 * MS);
        // the probe waits 2 x 4 ms after the last step was sent (4 x the 1 ms minimum would resend it after 4 ms)
        window.retransmit(29 * MS, NOWHERE);
        assertThat(resent).isEmpty();
        window.retransmit(33 * MS, NOWHERE);
        assertThat(resent).containsExactly(2L);
    }

    @Test
    void shouldMoveOnPastAStepWhoseRoundWasDeliveredWhileItTimedOut() {
        final SendWindow delivered = new SendWindow(counters, new RttEstimator(10 * MS, MS, 1000 * MS),
            new SendWindow.Resender() {
                @Override
                public boolean needsResult(final long seq) {
                    return false;
                }

                @Override
                public void resend(final long seq, final Outbox outbox) {
                    resent.add(seq);
                }
            });
        delivered.allocate(2);
        delivered.sendNext(0);
        delivered.sendNext(0);
        delivered.onResult(1, MS, NOWHERE);
        assertThat(delivered.oldestSeq()).isZero();
        // step 0's result never came, but its round was delivered: nothing to resend, and the window
        // must not hold the step forever (it would block every later step)
        delivered.retransmit(20 * MS, NOWHERE);
        assertThat(resent).isEmpty();
        assertThat(delivered.oldestSeq()).isEqualTo(2);
        assertThat(delivered.full()).isFalse();
        assertThat(delivered.skipNext()).isTrue();
    }

    @Test
    void aBurstLostAtTheTailIsResentInAFewRoundTripsClockedByItsResults() {
        sentAtZero(64, 64);
        // steps 24 to 63 were lost: only the first 24 come back, so no later result can reveal the rest
        for (int i = 0; i < 24; i++) {
            window.onResult(i, MS, NOWHERE);
        }
        window.retransmit(window.earliestDeadlineNs(), NOWHERE);
        assertThat(resent).containsExactly(24L, 25L, 26L, 27L);
        // the switch answers every resend a round trip later; each result clocks two more resends
        int roundTrips = 0;
        long now = window.earliestDeadlineNs();
        while (window.oldestSeq() < 64 && roundTrips < 10) {
            final List<Long> wave = new ArrayList<>(resent);
            resent.clear();
            now += MS;
            for (final long seq : wave) {
                window.onResult(seq, now, NOWHERE);
            }
            roundTrips++;
        }
        // 4, 8, 16, then the last 12: four round trips, where four resends a (backed-off) timeout would take ten timeouts
        assertThat(window.oldestSeq()).isEqualTo(64);
        assertThat(roundTrips).isEqualTo(4);
        assertThat(counters.get(WorkerCounter.RECOVERY_RESENDS)).isEqualTo(36);
    }

    @Test
    void aStepTheSwitchHoldsClocksNoOthers() {
        sentAtZero(8, 6);
        window.retransmit(window.earliestDeadlineNs(), NOWHERE);
        assertThat(resent).containsExactly(0L, 1L, 2L, 3L);
        final long at = window.earliestDeadlineNs();
        // the switch holds this worker's part of steps 0 to 3: the loss, if any, is a peer's
        for (long seq = 0; seq < 4; seq++) {
            window.onHeld(seq);
        }
        assertThat(counters.get(WorkerCounter.HELD_STEPS)).isEqualTo(4);
        resent.clear();
        // a held step's result clocks nothing: the peer's resend, not this worker's, completed it
        window.onResult(0, at + 101 * MS, NOWHERE);
        assertThat(resent).isEmpty();
        assertThat(counters.get(WorkerCounter.RECOVERY_RESENDS)).isZero();
    }

    @Test
    void aHeldStepIsNotFastRetransmittedUntilTheLowestOpenStepPassesIt() {
        sentAtZero(16, 6);
        // results 1 to 5: step 0 is taken for lost at the third and resent; the switch answers HELD (a peer's loss)
        for (int i = 1; i <= 5; i++) {
            window.onResult(i, MS, NOWHERE);
        }
        assertThat(resent).containsExactly(0L);
        window.onHeld(0);
        resent.clear();
        // a step sent after the resend comes back while no hint says step 0 was released: no resend
        window.sendNext(2 * MS);
        window.onResult(6, 5 * MS, NOWHERE);
        assertThat(resent).isEmpty();
        assertThat(counters.get(WorkerCounter.RESENDS_AVOIDED)).isEqualTo(1);
        // the lowest open step moved past it: step 0 was released and its result to this worker lost
        window.sendNext(6 * MS);
        window.hint(7, false);
        window.onResult(7, 8 * MS, NOWHERE);
        assertThat(resent).containsExactly(0L);
    }

    @Test
    void aStepResentLessThanASmoothedRttAgoIsNotResentAgain() {
        sentAtZero(16, 8);
        // a smoothed RTT of about 10 ms; steps 0 and 1 are taken for lost
        for (int i = 2; i < 8; i++) {
            window.onResult(i, 10 * MS, NOWHERE);
        }
        assertThat(resent).containsExactly(0L, 1L);
        resent.clear();
        // results of steps sent after the resends: within the RTT the resends are on their way, after it they go again
        window.sendNext(11 * MS);
        window.onResult(8, 12 * MS, NOWHERE);
        assertThat(resent).isEmpty();
        window.sendNext(13 * MS);
        window.onResult(9, 25 * MS, NOWHERE);
        assertThat(resent).containsExactly(0L, 1L);
    }

    @Test
    void aResultThatFindsItsStepDoneClocksNothing() {
        sentAtZero(8, 6);
        window.retransmit(window.earliestDeadlineNs(), NOWHERE);
        assertThat(resent).containsExactly(0L, 1L, 2L, 3L);
        final long now = window.earliestDeadlineNs() - MS;
        resent.clear();
        // step 0's multicast was only late: it comes, then the switch's answer to the resend finds the step done
        window.onResult(0, now, NOWHERE);
        final long clocked = counters.get(WorkerCounter.RECOVERY_RESENDS);
        window.onResult(0, now, NOWHERE);
        assertThat(counters.get(WorkerCounter.RECOVERY_RESENDS)).isEqualTo(clocked);
    }

    @Test
    void shouldKeepTheWindowAndPassReleasedSteps() {
        window.allocate(2);
        window.sendNext(0);
        window.sendNext(0);
        assertThat(window.full()).isTrue();
        window.onResult(0, MS, NOWHERE);
        assertThat(window.full()).isFalse();
        assertThat(window.skipNext()).isTrue();
        assertThat(window.nextSeq()).isEqualTo(3);
    }

    @Test
    void lateLedgerFoldsIntoTheNextRoundOrDrops() {
        final LateLedger ledger = new LateLedger(counters, 4);
        final RoundBuffers round = new RoundBuffers(2, 4, 1, 1);
        System.arraycopy(new float[] {1, 2, 3, 4}, 0, round.data, 0, 4);
        final StepLayout layout = new StepLayout(4, 2, 2);
        ledger.late(round, layout, 0, LateMode.FOLD);
        ledger.late(round, layout, 1, LateMode.DROP);
        final float[] next = {10, 10, 10, 10};
        assertThat(ledger.foldInto(next)).isTrue();
        assertThat(next).containsExactly(11, 12, 10, 10);
        assertThat(ledger.foldInto(next)).isFalse();
        assertThat(counters.get(WorkerCounter.FOLDED_CHUNKS)).isEqualTo(1);
        assertThat(counters.get(WorkerCounter.DROPPED_CHUNKS)).isEqualTo(1);
        // read-my-writes: the round retires its dropped chunk; the folded one travels on in the next round
        final float[] retired = new float[4];
        LateLedger.retiredInto(round, 2, retired);
        assertThat(retired).containsExactly(0, 0, 3, 4);
        final RoundBuffers following = new RoundBuffers(2, 4, 1, 1);
        System.arraycopy(next, 0, following.data, 0, 4);
        LateLedger.retiredInto(following, 2, retired);
        assertThat(retired).containsExactly(11, 12, 10, 10);
    }
}
