package io.serene.worker;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The rules the training loop and the simulator both follow for a round, case by case. */
class RoundPlanTest {
    private static final long MS = 1_000_000L;

    @Test
    void computesAnOpenRoundUnlessItHoldsAGradient() {
        assertThat(RoundPlan.computes(5, 4, false)).as("open, nothing held").isTrue();
        assertThat(RoundPlan.computes(5, 1, false)).as("open, rounds pending before it").isTrue();
        assertThat(RoundPlan.computes(5, 4, true)).as("a gradient held from a skipped round goes in instead").isFalse();
        assertThat(RoundPlan.computes(5, 5, false)).as("released without it already").isFalse();
        assertThat(RoundPlan.computes(5, 9, false)).as("the job went on past it").isFalse();
    }

    @Test
    void contributesToAnOpenRoundAndSkipsOrDropsAReleasedOne() {
        assertThat(RoundPlan.handIn(5, 4, 5, null)).isEqualTo(RoundPlan.HandIn.CONTRIBUTE);
        assertThat(RoundPlan.handIn(5, 4, 3, null)).as("a gradient kept from round 3 (fold)").isEqualTo(RoundPlan.HandIn.CONTRIBUTE);
        // released while it computed round 5's gradient
        assertThat(RoundPlan.handIn(5, 5, 5, LateMode.DROP)).isEqualTo(RoundPlan.HandIn.DROP);
        assertThat(RoundPlan.handIn(5, 5, 5, LateMode.FOLD)).as("kept for the next open round").isEqualTo(RoundPlan.HandIn.SKIP);
        // a gradient computed for an earlier round is never dropped for a later one: it waits for an open round
        assertThat(RoundPlan.handIn(6, 7, 5, LateMode.DROP)).isEqualTo(RoundPlan.HandIn.SKIP);
        assertThat(RoundPlan.handIn(6, 7, RoundPlan.NONE, LateMode.DROP)).as("released before it started").isEqualTo(RoundPlan.HandIn.SKIP);
        assertThatThrownBy(() -> RoundPlan.handIn(5, 4, RoundPlan.NONE, null)).isInstanceOf(IllegalStateException.class)
            .hasMessageContaining("round 5 is open");
    }

    @Test
    void aSitOutEndsAtTwiceTheTypicalComputeTimeAtTheLatest() {
        // past it the worker computes the round after all: a lost release must not stall the job
        assertThat(RoundPlan.sitOutDeadlineNs(1_000 * MS, 160 * MS)).isEqualTo(1_320 * MS);
        assertThat(RoundPlan.sitOutDeadlineNs(1_000 * MS, 0)).as("nothing computed yet: no wait").isEqualTo(1_000 * MS);
    }

    @Test
    void aGradientHeldForAnEarlierRoundGoesWithTheNextOneUnderATimeout() {
        assertThat(RoundPlan.foldsHeld(6, 5, 4, 30 * MS)).isTrue();
        assertThat(RoundPlan.foldsHeld(6, 5, 4, SyncConfig.NO_TIMEOUT)).as("no timeout: it goes alone (a quorum's)").isFalse();
        assertThat(RoundPlan.foldsHeld(6, 5, RoundPlan.NONE, 30 * MS)).as("none held").isFalse();
        assertThat(RoundPlan.foldsHeld(6, 6, 4, 30 * MS)).as("round 6 released: skipped, still held").isFalse();
        assertThat(RoundPlan.foldsHeld(6, 5, 6, 30 * MS)).as("its own round's").isFalse();
    }

    @Test
    void computesWhileWaitingOnlyUnderABusyConfigWithSomethingPendingThatIsExpectedLater() {
        final Arrivals a = new Arrivals();
        for (int i = 0; i < 3; i++) {
            a.computed(10 * MS);
            a.arrived(i * 100 * MS, i * 100 * MS + 40 * MS);
        }
        // sent at 1000 ms, expected from 1040 ms on: a 10 ms gradient fits at 1020 ms, not at 1035 ms
        assertThat(RoundPlan.computesWhileWaiting(true, false, false, true, a, 1020 * MS, 1000 * MS)).isTrue();
        assertThat(RoundPlan.computesWhileWaiting(true, false, false, true, a, 1035 * MS, 1000 * MS)).isFalse();
        assertThat(RoundPlan.computesWhileWaiting(false, false, false, true, a, 1020 * MS, 1000 * MS)).as("not WBSP").isFalse();
        assertThat(RoundPlan.computesWhileWaiting(true, true, false, true, a, 1020 * MS, 1000 * MS)).as("cleared").isFalse();
        assertThat(RoundPlan.computesWhileWaiting(true, false, true, true, a, 1020 * MS, 1000 * MS)).as("holds a gradient").isFalse();
        assertThat(RoundPlan.computesWhileWaiting(true, false, false, false, a, 1020 * MS, 1000 * MS)).as("nothing pending").isFalse();
        assertThat(RoundPlan.slowAs(7)).as("as slow as the round it waits on").isEqualTo(6);
        assertThat(RoundPlan.slowAs(0)).isZero();
    }
}
