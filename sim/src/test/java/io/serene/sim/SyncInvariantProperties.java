package io.serene.sim;

import io.serene.protocol.sync.SyncSchedule;
import net.jqwik.api.Assume;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/design.md invariants 1-5 in simulations driven by the real engines: random sync configs, random
 * hot-swaps while workers are spread over several rounds, random stragglers, loss, duplication and
 * reordering. jqwik prints the falsifying sample (seed included); the message carries the
 * runner's diagnostics.
 */
class SyncInvariantProperties {
    private static final String[] CONFIGS = {
        "bsp", "ssp:1", "ssp:3", "asp", "fastest:1", "fastest:2", "exclude:0", "exclude:1+drop",
        "ssp:2+timeout:12", "bsp+timeout:8+drop", "quorum:2+ssp:1", "wbsp", "ssp:1+busy+exclude:0",
    };
    private static final String[] STRAGGLERS = {
        "none", "persistent:1:x3", "transient:p=0.2,x4", "heavytail:alpha=2", "classes:0-1=x1,2-5=x2",
        // Serene's pauses: under a timeout, paused workers sit rounds out to get back in step
        "slow:p=0.15,pause=0.5-2.0",
    };

    @Property(tries = 1000)
    void invariantsHoldUnderRandomConfigsSwapsAndFaults(
        @ForAll @IntRange(min = 2, max = 6) final int workers,
        @ForAll @IntRange(min = 0, max = 12) final int first,
        @ForAll @IntRange(min = 0, max = 12) final int second,
        @ForAll @IntRange(min = 0, max = 5) final int stragglers,
        @ForAll @IntRange(min = 0, max = 4) final int swaps,
        @ForAll @DoubleRange(min = 0, max = 0.1) final double loss,
        @ForAll @DoubleRange(min = 0, max = 0.05) final double duplication,
        @ForAll @DoubleRange(min = 0, max = 0.1) final double reordering,
        @ForAll final boolean keyed,
        @ForAll final long seed) {
        // asp lets workers run a whole release ring (64 rounds) ahead: no change can come before round 64
        final String policy = CONFIGS[first].equals("asp") ? "asp" : CONFIGS[first] + "@0," + CONFIGS[second] + "@12";
        // keyed: every packet signed and numbered, replay windows on both sides (a duplicate is refused as a replay)
        final Scenario scenario = new Scenario().workers(workers).rounds(30).schedule(SyncSchedule.parse(policy))
            .stragglers(STRAGGLERS[stragglers]).seed(seed).elements(600).chunkElements(256).computeNs(5_000_000L)
            .faults(loss, duplication, reordering).randomSwaps(swaps).keyed(keyed);
        assertEveryCheck(scenario, policy, seed);
    }

    @Property(tries = 1000)
    void invariantsHoldWithWorkerGroupsEachUnderItsOwnConfigs(
        @ForAll @IntRange(min = 2, max = 6) final int workers,
        @ForAll @IntRange(min = 1, max = 3) final int groups,
        @ForAll @IntRange(min = 0, max = 12) final int first,
        @ForAll @IntRange(min = 0, max = 12) final int second,
        @ForAll @IntRange(min = 0, max = 5) final int stragglers,
        @ForAll @IntRange(min = 1, max = 6) final int swaps,
        @ForAll @DoubleRange(min = 0, max = 0.1) final double loss,
        @ForAll @DoubleRange(min = 0, max = 0.05) final double duplication,
        @ForAll @DoubleRange(min = 0, max = 0.1) final double reordering,
        @ForAll final long seed) {
        Assume.that(!CONFIGS[first].equals("asp"));
        final int[] groupOf = new int[workers];
        for (int w = 0; w < workers; w++) {
            groupOf[w] = w % (groups + 1);
        }
        final String policy = CONFIGS[first] + "@0," + CONFIGS[second] + "@12";
        final Scenario scenario = new Scenario().workers(workers).rounds(30).schedule(SyncSchedule.parse(policy)).groups(groupOf)
            .stragglers(STRAGGLERS[stragglers]).seed(seed).elements(600).chunkElements(256).computeNs(5_000_000L)
            .faults(loss, duplication, reordering).randomSwaps(swaps);
        // configs whose quorum cannot fit a group's members are refused up front
        Assume.that(fits(scenario));
        assertEveryCheck(scenario, policy, seed);
    }

    /** Runs the scenario and asserts invariants 1-5 (and no errors), naming the policy, schedule and seed on failure. */
    /** With a secret, a duplicated packet is refused as a replay on either side, and every check still holds. */
    @Example
    void keyedEveryDuplicateIsRefusedAsAReplayAndEveryCheckHolds() {
        final Scenario scenario = new Scenario().workers(4).rounds(40).schedule(SyncSchedule.parse("ssp:2")).stragglers("transient:p=0.2,x4")
            .seed(3).elements(600).chunkElements(256).computeNs(5_000_000L).faults(0.02, 0.05, 0.05).keyed(true);
        final ScenarioRunner runner = new ScenarioRunner(scenario);
        final ScenarioResult r = runner.run();
        assertThat(r.allChecks()).as(runner.diagnostics()).isTrue();
        assertThat(runner.diagnostics()).as("the switch's counters").containsPattern("switch: .*drop_replayed=[1-9]")
            .as("a worker's").containsPattern("worker 0: .*drop_replayed=[1-9]");
    }

    private static void assertEveryCheck(final Scenario scenario, final String policy, final long seed) {
        final ScenarioRunner runner = new ScenarioRunner(scenario);
        final ScenarioResult r = runner.run();
        final String why = "policy " + policy + " (" + r.schedule + "), seed " + seed + "\n" + runner.diagnostics();
        assertThat(r.completed).as("liveness: %s", why).isTrue();
        assertThat(r.exactlyOnce).as("exactly once: %s", why).isTrue();
        assertThat(r.agreement).as("agreement: %s", why).isTrue();
        assertThat(r.boundRespected).as("bound: %s", why).isTrue();
        assertThat(r.hotSwapConsistent).as("hot-swap: %s", why).isTrue();
        assertThat(r.errors).as("errors: %s", why).isZero();
    }

    private static boolean fits(final Scenario scenario) {
        try {
            scenario.validate();
            return true;
        } catch (final IllegalArgumentException ex) {
            return false;
        }
    }

    @Test
    void sspBoundsStalenessAndWaitsLessThanBspUnderTransientStragglers() {
        final ScenarioResult ssp = sim("ssp:3", 64, 100, "transient:p=0.05,x4");
        final ScenarioResult bsp = sim("bsp", 64, 100, "transient:p=0.05,x4");
        assertThat(ssp.allChecks()).isTrue();
        assertThat(bsp.allChecks()).isTrue();
        assertThat(ssp.maxStaleness).isLessThanOrEqualTo(3);
        assertThat(bsp.maxStaleness).isZero();
        assertThat(ssp.cumulativeWaitingNs).isLessThan(bsp.cumulativeWaitingNs);
        assertThat(ssp.jctNs).isLessThan(bsp.jctNs);
    }

    @Test
    void wbspKeepsBspsRoundsAndComputesWhileWaiting() {
        // a persistent straggler: the others wait every round, and fill the wait with gradients
        final ScenarioResult wbsp = sim("wbsp", 16, 100, "persistent:3:x4");
        final ScenarioResult bsp = sim("bsp", 16, 100, "persistent:3:x4");
        assertThat(wbsp.allChecks()).isTrue();
        assertThat(wbsp.maxStaleness).isZero();
        assertThat(wbsp.busyGradients).as("about two more gradients a round for each of the 13 fast workers").isGreaterThan(13L * 100);
        assertThat(bsp.busyGradients).isZero();
        assertThat(wbsp.computeShare).isGreaterThan(bsp.computeShare);
        assertThat(wbsp.jctNs).as("a gradient computed while waiting never holds up a release").isEqualTo(bsp.jctNs);
    }

    @Test
    void aWbspWorkerThatStraggledComputesNothingWhileWaiting() {
        // transient stragglers at 256 workers: nearly every round waits for someone; the one who was slow
        // sends last and starts its next round at once, so the job is as fast as BSP
        final ScenarioResult wbsp = sim("wbsp", 256, 40, "transient:p=0.05,x4");
        final ScenarioResult bsp = sim("bsp", 256, 40, "transient:p=0.05,x4");
        assertThat(wbsp.allChecks()).isTrue();
        assertThat(wbsp.busyGradients).isPositive();
        assertThat((double) wbsp.jctNs).isLessThanOrEqualTo(bsp.jctNs * 1.02);
    }

    @Test
    void aHotSwapScheduleKeepsEveryCheck() {
        final ScenarioResult r = sim("bsp@0,ssp:3@25,fastest:14@50,bsp@75", 16, 100, "persistent:3:x3");
        assertThat(r.allChecks()).isTrue();
        assertThat(r.configInstalls).isEqualTo(3);
        assertThat(r.partialReleases).isPositive();
        assertThat(r.folded).isPositive();
    }

    @Test
    @Tag("slow")
    void twoHundredFiftySixWorkersAggregateUnderSsp() {
        final ScenarioResult r = sim("ssp:2", 256, 60, "transient:p=0.05,x4");
        assertThat(r.allChecks()).isTrue();
        assertThat(r.included).isEqualTo(256L * 60 * 2);
        assertThat(r.maxStaleness).isLessThanOrEqualTo(2);
    }

    private static ScenarioResult sim(final String policy, final int workers, final int rounds,
                                                     final String stragglers) {
        return new ScenarioRunner(new Scenario().workers(workers).rounds(rounds).schedule(SyncSchedule.parse(policy))
            .stragglers(stragglers).seed(11)).run();
    }
}
