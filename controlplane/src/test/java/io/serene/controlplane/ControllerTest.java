package io.serene.controlplane;

import io.serene.protocol.Status;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Controller decisions on recorded telemetry. */
class ControllerTest {
    private final List<String> installs = new ArrayList<>();
    private int earliest = 5;

    private Controller controller(final String policy, final int workers) {
        return new Controller(PolicyParser.parse(policy), 1, workers, new Controller.SwitchControl() {
            @Override
            public int earliestSwapRound() {
                return earliest;
            }

            @Override
            public Status write(final TableWrite write) {
                assertThat(write.kind()).isEqualTo(TableWrite.Kind.INSTALL);
                final SyncConfigEntry e = (SyncConfigEntry) write.entry();
                assertThat(e.job()).isEqualTo(1);
                installs.add((e.group() == 0 ? "" : e.group() + ":") + e.config() + "@" + e.firstRound());
                return Status.OK;
            }
        });
    }

    private static Controller.Telemetry round(final int released, final int[] clocks, final long... iterationMs) {
        final Controller.Telemetry t = new Controller.Telemetry();
        t.releasedRound = released;
        t.clocks = clocks;
        t.iterationNs = new long[iterationMs.length];
        for (int i = 0; i < iterationMs.length; i++) {
            t.iterationNs[i] = iterationMs[i] * 1_000_000L;
        }
        return t;
    }

    @Test
    void aRuleFiresOnlyAfterItsConditionHeldForNRoundsInARow() {
        final Controller c = controller("start bsp\nwhen lag >= 2 for 3 rounds then ssp(4)\nwhen lag <= 1 for 2 rounds then bsp", 3);
        c.onRound(round(0, new int[] {2, 1, 1}, 10, 10, 10));   // lag 2
        c.onRound(round(1, new int[] {2, 2, 2}, 10, 10, 10));   // lag 1: streak broken
        c.onRound(round(2, new int[] {4, 3, 3}, 10, 10, 10));
        c.onRound(round(3, new int[] {5, 4, 4}, 10, 10, 10));
        assertThat(installs).isEmpty();
        c.onRound(round(4, new int[] {6, 5, 5}, 10, 10, 10));
        assertThat(installs).containsExactly("ssp:4@5");
        assertThat(c.decisions().get(0).reason).isEqualTo("lag >= 2 for 3 rounds (lag = 2.00)");
        earliest = 11;
        c.onRound(round(5, new int[] {6, 6, 6}, 10, 10, 10));
        c.onRound(round(6, new int[] {7, 7, 7}, 10, 10, 10));
        assertThat(installs).containsExactly("ssp:4@5", "bsp@11");
        assertThat(c.decisions()).hasSize(2);
        assertThat(c.decisions().get(1).from).isEqualTo("ssp:4");
    }

    @Test
    void aWorkerTheFailureDetectorReportsIsExcludedAndTakenBackOnceHeardFrom() {
        final Controller c = controller("start bsp\nwhen failed(worker) then exclude(worker) drop\n"
            + "when failed(worker) == 0 for 2 rounds then include(worker)", 3);
        c.onRound(round(0, new int[] {0, 0, 0}, 10, 10, 10));
        assertThat(installs).isEmpty();
        final Controller.Telemetry silent = round(1, new int[] {1, 1, 0}, 10, 10, 10);
        silent.failed.set(2);
        c.onRound(silent);
        assertThat(installs).containsExactly("bsp+exclude:2+drop@5");
        assertThat(c.decisions().get(0).reason).isEqualTo("worker 2: failed(worker) == 1 for 1 rounds (silent)");
        final Controller.Telemetry still = round(2, new int[] {2, 2, 0}, 10, 10, 10);
        still.failed.set(2);
        c.onRound(still);
        assertThat(installs).as("once is enough").hasSize(1);
        earliest = 9;
        c.onRound(round(3, new int[] {3, 3, 3}, 10, 10, 10));
        c.onRound(round(4, new int[] {4, 4, 4}, 10, 10, 10));
        assertThat(installs).containsExactly("bsp+exclude:2+drop@5", "bsp@9");
    }

    @Test
    void afterTheJobIsRebuiltTheControllerInstallsWhatItHadDecidedAgain() {
        final Controller c = controller("start bsp\nwhen failed(worker) then exclude(worker) drop", 3);
        final Controller.Telemetry silent = round(1, new int[] {1, 1, 0}, 10, 10, 10);
        silent.failed.set(2);
        c.onRound(silent);
        assertThat(installs).containsExactly("bsp+exclude:2+drop@5");
        // the switch formed the job anew with the start config: the exclusion goes in again at the new job's earliest round
        c.jobRebuilt();
        earliest = 41;
        c.onRound(round(40, new int[] {40, 40, 39}, 10, 10, 10));
        assertThat(installs).containsExactly("bsp+exclude:2+drop@5", "bsp+exclude:2+drop@41");
        assertThat(c.decisions().get(1).reason).isEqualTo("the job was rebuilt from checkpoints: its configs installed again");
    }

    @Test
    void lagSeesATransientStragglerInOneSampleAndIgnoresExcludedWorkers() {
        // lag under BSP: the rounds a median worker finishes while the slowest finishes one
        final Controller c = controller("start bsp\nwhen lag >= 2 for 1 rounds then ssp(4)", 3);
        c.onRound(round(0, new int[] {1, 1, 1}, 10, 10, 10));
        assertThat(installs).isEmpty();
        c.onRound(round(1, new int[] {2, 2, 2}, 10, 10, 30));
        assertThat(installs).containsExactly("ssp:4@5");

        installs.clear();
        final Controller excluding = controller("start bsp\nwhen slowdown(worker) > 3 for 1 rounds then exclude(worker)\n"
            + "when lag >= 2 for 1 rounds then ssp(4)", 3);
        excluding.onRound(round(0, new int[] {1, 1, 1}, 10, 10, 40));
        assertThat(installs).as("the slow worker is excluded; it holds nobody back").containsExactly("bsp+exclude:2@5");
        excluding.onRound(round(1, new int[] {2, 2, 1}, 10, 10, 40));
        assertThat(installs).hasSize(1);
    }

    @Test
    void aGuardedRuleAppliesOnlyInItsConfigSoRulesCanEscalate() {
        final Controller c = controller("start bsp\nwhen lag >= 2 for 1 rounds in bsp then ssp(2)\n"
            + "when lag >= 3 for 2 rounds in ssp(2) then ssp(4)\nwhen lag <= 1 for 2 rounds then bsp", 3);
        c.onRound(round(0, new int[] {3, 1, 1}, 10, 10, 10));   // lag 3: only the bsp rule applies
        assertThat(installs).containsExactly("ssp:2@5");
        c.onRound(round(1, new int[] {4, 2, 2}, 10, 10, 10));   // lag 3 in ssp(2): 1 of 2 rounds
        c.onRound(round(2, new int[] {5, 3, 3}, 10, 10, 10));
        assertThat(installs).containsExactly("ssp:2@5", "ssp:4@5");
        // in ssp(4) neither raising rule applies (without the guard "lag >= 2 then ssp(2)" would pull it back)
        c.onRound(round(3, new int[] {6, 4, 4}, 10, 10, 10));
        c.onRound(round(4, new int[] {7, 5, 5}, 10, 10, 10));
        assertThat(installs).hasSize(2);
        assertThat(c.decisions().get(1).reason).startsWith("lag >= 3 for 2 rounds in ssp:2");
    }

    @Test
    void slowWorkersAreExcludedAndIncludedAgain() {
        final Controller c = controller("start bsp\nwhen slowdown(worker) > 3 for 2 rounds then exclude(worker) drop\n"
            + "when slowdown(worker) < 1.5 for 2 rounds then include(worker)", 4);
        c.onRound(round(0, new int[] {0, 0, 0, 0}, 10, 10, 10, 40));
        c.onRound(round(1, new int[] {1, 1, 1, 1}, 10, 10, 10, 40));
        assertThat(installs).containsExactly("bsp+exclude:3+drop@5");
        // recovered: once its fast samples are the median of its last 5, for 2 rounds
        for (int r = 2; r < 5; r++) {
            c.onRound(round(r, new int[] {r, r, r, r}, 10, 10, 10, 11));
        }
        assertThat(installs).hasSize(1);
        c.onRound(round(5, new int[] {5, 5, 5, 5}, 10, 10, 10, 11));
        assertThat(installs).containsExactly("bsp+exclude:3+drop@5", "bsp@5");
        assertThat(c.decisions().get(0).reason).startsWith("worker 3: slowdown(worker) > 3 for 2 rounds");
    }

    @Test
    void smoothSetsHowManySamplesTheSlowdownMedianTakes() {
        // smooth 1: the last sample alone; a straggler is excluded at the first evaluation that shows
        // it and taken back at the first fast one
        Controller c = controller("smooth 1\nwhen slowdown(worker) > 5 then exclude(worker)\n"
            + "when slowdown(worker) < 1.5 then include(worker)", 4);
        c.onRound(round(0, new int[] {0, 0, 0, 0}, 10, 10, 10, 10));
        c.onRound(round(1, new int[] {1, 1, 1, 1}, 10, 10, 10, 80));
        assertThat(installs).containsExactly("bsp+exclude:3@5");
        c.onRound(round(2, new int[] {2, 2, 2, 2}, 10, 10, 10, 11));
        assertThat(installs).containsExactly("bsp+exclude:3@5", "bsp@5");

        // smooth 3: one slow sample among fast ones is noise; the second in the last 3 is a straggler
        installs.clear();
        c = controller("smooth 3\nwhen slowdown(worker) > 5 then exclude(worker)", 4);
        final long[] worker3 = {10, 10, 10, 80, 10, 80};
        for (int r = 0; r < worker3.length; r++) {
            c.onRound(round(r, new int[] {r, r, r, r}, 10, 10, 10, worker3[r]));
            assertThat(installs).hasSize(r < 5 ? 0 : 1);
        }
        assertThat(installs).containsExactly("bsp+exclude:3@5");

        // the default, 5: the same straggler waits for a third slow sample
        installs.clear();
        c = controller("when slowdown(worker) > 5 then exclude(worker)", 4);
        final long[] again = {10, 10, 10, 80, 10, 80, 10, 80};
        for (int r = 0; r < again.length; r++) {
            c.onRound(round(r, new int[] {r, r, r, r}, 10, 10, 10, again[r]));
            assertThat(installs).hasSize(r < 7 ? 0 : 1);
        }
    }

    @Test
    void aStragglerThatTakesAnExcludedOnesPlaceIsSeenAlthoughHalfTheWorkersLookSlow() {
        // a moving straggler: worker 1 was slow and is excluded, its last samples still slow when
        // worker 2 turns slow. Against the mean of the two middle values (10 and 80 ms) worker 2
        // would be 1.8x; against a typical worker's time it is 8x.
        final Controller c = controller("start bsp\nwhen slowdown(worker) > 2 for 2 rounds then exclude(worker) fold", 4);
        c.onRound(round(0, new int[] {0, 0, 0, 0}, 10, 80, 10, 10));
        c.onRound(round(1, new int[] {1, 1, 1, 1}, 10, 80, 10, 10));
        assertThat(installs).containsExactly("bsp+exclude:1@5");
        for (int r = 2; r < 5; r++) {
            c.onRound(round(r, new int[] {r, 1, r, r}, 10, 80, 80, 10));
        }
        assertThat(installs).containsExactly("bsp+exclude:1@5", "bsp+exclude:1,2@5");
        assertThat(c.decisions().get(1).reason).isEqualTo("worker 2: slowdown(worker) > 2 for 2 rounds (slowdown = 8.00)");
    }

    @Test
    void eachGroupHasItsOwnConfigAndExclusionsChangeOnlyTheirWorkersGroup() {
        final Controller c = controller(String.join("\n",
            "group old = 3",
            "start bsp",
            "when lag >= 2 for 2 rounds in old: bsp then old: bsp + timeout(20)",
            "when lag <= 1 for 2 rounds in old: bsp + timeout(20) then old: bsp",
            "when slowdown(worker) > 3 for 2 rounds then exclude(worker) drop"), 4);
        assertThat(c.groupOf()).containsExactly(0, 0, 0, 1);
        // worker 3 is 3x slower: lag 2 (it holds the others back), not slow enough to be excluded
        c.onRound(round(0, new int[] {0, 0, 0, 0}, 10, 10, 10, 30));
        assertThat(installs).isEmpty();
        c.onRound(round(1, new int[] {1, 1, 1, 1}, 10, 10, 10, 30));
        assertThat(installs).containsExactly("1:bsp+timeout:20@5");
        assertThat(c.decisions().get(0).from).isEqualTo("old: bsp");
        assertThat(c.decisions().get(0).to).isEqualTo("old: bsp+timeout:20");
        // worker 1 turns slow and is excluded: only the default group's entry changes
        for (int r = 2; r < 5; r++) {
            c.onRound(round(r, new int[] {r, r, r, r}, 10, 100, 10, 30));
        }
        assertThat(installs).containsExactly("1:bsp+timeout:20@5", "bsp+exclude:1+drop@5");
        // all even again: the rule guarded by old's config takes the timeout back
        earliest = 20;
        for (int r = 5; r < 12; r++) {
            c.onRound(round(r, new int[] {r, r, r, r}, 10, 10, 10, 10));
        }
        assertThat(installs).contains("1:bsp@20");
    }

    private static Controller.Telemetry timed(final int released, final long roundMs) {
        final Controller.Telemetry t = round(released, new int[] {released, released, released, released}, 10, 10, 10, 10);
        t.roundTimeNs = roundMs * 1_000_000L;
        return t;
    }

    @Test
    void aRelativeTimeoutIsAShareOfTheLowerQuartileOfTheLastRoundTimesAndFollowsItWhenItMoves() {
        final Controller c = controller("start bsp\nwhen round >= 3 then bsp + timeout(30%) + drop", 4);
        // rounds of 100 ms, every other one held up to 400 ms by a slow worker: the lower quartile is 100
        for (int r = 0; r < 3; r++) {
            c.onRound(timed(r, r % 2 == 0 ? 100 : 400));
            assertThat(installs).as("round %d", r).isEmpty();
        }
        c.onRound(timed(3, 400));
        assertThat(installs).containsExactly("bsp+timeout:30+drop@5");
        assertThat(c.decisions().get(0).to).isEqualTo("bsp+timeout:30+drop");
        assertThat(c.decisions().get(0).reason).isEqualTo("round >= 3 for 1 rounds (round = 3.00)");
        // a move under a fifth of the typical round leaves the installed timeout alone
        for (int r = 4; r < 40; r++) {
            c.onRound(timed(r, r % 2 == 0 ? 115 : 400));
        }
        assertThat(installs).hasSize(1);
        // rounds twice as long (a slower phase): once the quartile moved past a fifth, the timeout follows
        earliest = 50;
        int r = 40;
        while (installs.size() == 1 && r < 60) {
            c.onRound(timed(r, 200));
            r++;
        }
        assertThat(installs).containsExactly("bsp+timeout:30+drop@5", "bsp+timeout:60+drop@50");
        assertThat(r).as("once 3 or fewer of the last 16 are short, the lower quartile is a long one").isEqualTo(40 + 9);
        assertThat(c.decisions().get(1).reason).isEqualTo("typical round time 200.00 ms (the lower quartile of the last 16)");
    }

    @Test
    void aRelativeTimeoutIsLeftOutUntilARoundTimeIsMeasuredAndKeepsItsGuardAndExclusions() {
        final Controller c = controller("smooth 1\nstart bsp\nwhen round >= 0 then bsp + timeout(50%)\n"
            + "when slowdown(worker) > 3 then exclude(worker) drop\n"
            + "when round_time > 1000 in bsp + timeout(50%) then bsp", 4);
        c.onRound(round(0, new int[] {0, 0, 0, 0}, 10, 10, 10, 10));
        assertThat(installs).as("no round time yet: no timeout, nothing to install").isEmpty();
        c.onRound(timed(1, 40));
        assertThat(installs).containsExactly("bsp+timeout:20@5");
        final Controller.Telemetry slow = timed(2, 40);
        slow.iterationNs[3] = 80_000_000L;
        c.onRound(slow);
        assertThat(installs).containsExactly("bsp+timeout:20@5", "bsp+exclude:3+timeout:20+drop@5");
        c.onRound(timed(3, 2000));
        assertThat(installs).as("the guard compares the relative config").last().isEqualTo("bsp+exclude:3+drop@5");
    }
}
