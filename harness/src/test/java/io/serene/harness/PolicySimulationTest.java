package io.serene.harness;

import io.serene.controlplane.Controller;
import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyParser;
import io.serene.harness.cli.DemoCommand;
import io.serene.harness.cli.PolicyCommand;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.sim.Scenario;
import io.serene.sim.ScenarioResult;
import io.serene.sim.ScenarioRunner;
import io.serene.training.StragglerProfile;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** Policies drive simulations through the controller; the invariants still hold. */
class PolicySimulationTest {
    private static final Path EXAMPLES = Path.of(System.getProperty("user.dir")).resolveSibling("examples");

    @Test
    void everyExamplePolicyParses() throws Exception {
        try (Stream<Path> files = Files.list(EXAMPLES)) {
            assertThat(files.filter(f -> f.toString().endsWith(".policy")).peek(PolicyCommand::load).count())
                .isGreaterThanOrEqualTo(5);
        }
    }

    @Test
    void theDemoEmbedsTheAdaptiveExample() throws Exception {
        assertThat(PolicyParser.parse(DemoCommand.ADAPTIVE)).isEqualTo(PolicyCommand.load(EXAMPLES.resolve("adaptive.policy")));
    }

    @Test
    void theAdaptivePolicyLeavesBspUnderStragglersAndWaitsLess() {
        final Policy adaptive = PolicyCommand.load(EXAMPLES.resolve("adaptive.policy"));
        final ScenarioResult r = new ScenarioRunner(new Scenario().workers(32).rounds(600)
            .policy(adaptive).stragglers("transient:p=0.02,x5").seed(3)).run();
        final ScenarioResult bsp = new ScenarioRunner(new Scenario().workers(32).rounds(600)
            .schedule(SyncSchedule.parse("bsp")).stragglers("transient:p=0.02,x5").seed(3)).run();
        assertThat(r.allChecks()).isTrue();
        assertThat(r.decisions).isNotEmpty();
        // it loosens the bound while the workers drift apart (an exclusion of a 5x step may come first)
        assertThat(r.decisions).as(r.decisions.toString()).anySatisfy(d -> assertThat(d.to).startsWith("ssp:2"));
        assertThat(r.cumulativeWaitingNs).isLessThan(bsp.cumulativeWaitingNs);
    }

    @Test
    void autoKeepsTheInvariantsUnderEveryStragglerShapeAndLossAndWaitsLessThanBsp() {
        // generalize.yaml's shapes but the trace (its file is relative to the repository's root), with loss and duplication
        for (final String shape : new String[] {"persistent:3:x8", "moving:x8,rounds=30", "transient:p=0.1,x4",
            "transient:p=0.2,x4,rounds=10", "heavytail:alpha=2.5", "classes:3-3=x3,7-7=x3"}) {
            final ScenarioResult r = new ScenarioRunner(new Scenario().workers(16).rounds(160)
                .policy(PolicyParser.builtIn("auto")).stragglers(shape).seed(5).faults(0.01, 0.01, 0)).run();
            final ScenarioResult bsp = new ScenarioRunner(new Scenario().workers(16).rounds(160)
                .schedule(SyncSchedule.parse("bsp")).stragglers(shape).seed(5).faults(0.01, 0.01, 0)).run();
            assertThat(r.allChecks()).as(shape + " (seed 5)").isTrue();
            assertThat(r.jctNs).as(shape + ": " + r.decisions).isLessThanOrEqualTo((long) (bsp.jctNs * 1.05));
        }
    }

    @Test
    void aStragglerBeyondAQuorumDropsOrKeepsItsGradientsAsTheTrainingLoopDoes() {
        // released while it computes (RoundPlan): under drop none of its gradients counts; under fold
        // each goes into its next open round, so it skips fewer rounds and drops nothing
        final ScenarioResult drop = new ScenarioRunner(new Scenario().workers(4).rounds(100)
            .schedule(SyncSchedule.parse("fastest:3+drop")).stragglers("persistent:3:x3").seed(2)).run();
        final ScenarioResult fold = new ScenarioRunner(new Scenario().workers(4).rounds(100)
            .schedule(SyncSchedule.parse("fastest:3+fold")).stragglers("persistent:3:x3").seed(2)).run();
        assertThat(drop.allChecks()).isTrue();
        assertThat(fold.allChecks()).isTrue();
        assertThat(drop.droppedGradients).isPositive();
        assertThat(drop.skippedRounds).as("it never contributes").isEqualTo(100);
        assertThat(fold.droppedGradients).isZero();
        assertThat(fold.skippedRounds).isBetween(1L, 99L);
        assertThat(fold.folded).isPositive();
    }

    @Test
    void excludingAPersistentStragglerKeepsTheInvariants() {
        final Policy policy = PolicyCommand.load(EXAMPLES.resolve("exclude-stragglers.policy"));
        final ScenarioResult r = new ScenarioRunner(new Scenario().workers(8).rounds(120)
            .policy(policy).stragglers("persistent:2:x4").seed(9).faults(0.02, 0.01, 0.02)).run();
        assertThat(r.allChecks()).isTrue();
        assertThat(r.decisions).isNotEmpty();
        assertThat(r.decisions.get(0).to).contains("exclude:2");
        assertThat(r.folded).isPositive();
        // left out, the straggler still tells the switch its compute times
        assertThat(r.reports).isPositive();
    }

    @Test
    void aMovingStragglerIsExcludedWhereverItGoesAndTakenBackAfterIt() {
        followsAMovingStraggler("exclude-stragglers.policy");
        followsAMovingStraggler("dynamic-fold.policy");
    }

    @Test
    void theDynamicPolicysTimeoutCutsAMovingStragglerItHasNotExcluded() {
        final ScenarioResult r = underTheMovingStraggler(
            new Scenario().policy(PolicyCommand.load(EXAMPLES.resolve("dynamic.policy"))));
        final ScenarioResult bsp = underTheMovingStraggler(new Scenario().schedule(SyncSchedule.parse("bsp")));
        assertThat(r.allChecks()).as(r.schedule).isTrue();
        assertThat(r.decisions).extracting(d -> d.reason).anyMatch(reason -> reason.startsWith("round >= 20"));
        assertThat(r.timeoutReleases).as("each new straggler's rounds go at the timeout").isPositive();
        assertThat(r.jctNs).isLessThan(bsp.jctNs);
    }

    private static final String MOVING = "moving:x8,rounds=60";

    /** 8 workers, 600 rounds, a straggler that moves every 60, seed 4, 1% loss, duplication and reordering. */
    private static ScenarioResult underTheMovingStraggler(final Scenario scenario) {
        return new ScenarioRunner(scenario.workers(8).rounds(600).stragglers(MOVING).seed(4).faults(0.01, 0.01, 0.01)).run();
    }

    private static void followsAMovingStraggler(final String file) {
        final ScenarioResult r = underTheMovingStraggler(
            new Scenario().policy(PolicyCommand.load(EXAMPLES.resolve(file))));
        final ScenarioResult bsp = underTheMovingStraggler(new Scenario().schedule(SyncSchedule.parse("bsp")));
        assertThat(r.allChecks()).as(r.schedule).isTrue();
        final StragglerProfile profile = StragglerProfile.parse(MOVING, 4, 8);
        final Set<Integer> stragglers = new TreeSet<>();
        for (int round = 0; round < 600; round++) {
            for (int w = 0; w < 8; w++) {
                if (profile.factor(w, round) > 1) {
                    stragglers.add(w);
                }
            }
        }
        // one decision may take a worker back and exclude another: compare the excluded sets
        final Set<Integer> excluded = new TreeSet<>();
        int included = 0;
        for (final Controller.Decision d : r.decisions) {
            final Set<Integer> before = excludedIn(d.from);
            final Set<Integer> after = excludedIn(d.to);
            after.stream().filter(w -> !before.contains(w)).forEach(excluded::add);
            included += (int) before.stream().filter(w -> !after.contains(w)).count();
        }
        assertThat(stragglers).as("the straggler moved").hasSizeGreaterThan(2);
        assertThat(excluded).as("%s: %s", file, r.decisions).isEqualTo(stragglers);
        // an excluded worker skips the rounds released without it, so once the straggler has moved
        // on it keeps up and is taken back: every straggler but the last (and maybe one the straggler
        // returned to) is
        assertThat(r.skippedRounds).as(file).isPositive();
        assertThat(included).as("%s: %s", file, r.decisions).isGreaterThanOrEqualTo(stragglers.size() - 2);
        assertThat(r.jctNs).as(file).isLessThan(bsp.jctNs);
    }

    /** The workers a config such as {@code bsp+exclude:2,5} excludes. */
    private static Set<Integer> excludedIn(final String config) {
        final Set<Integer> workers = new TreeSet<>();
        SyncConfigParser.parse(config).excluded().stream().forEach(workers::add);
        return workers;
    }

    @Test
    void aGroupsTimeoutStopsWaitingForItsSlowMemberOnly() {
        final Policy tiers = PolicyCommand.load(EXAMPLES.resolve("tiers.policy"));
        final ScenarioResult r = new ScenarioRunner(new Scenario().workers(8).rounds(300)
            .policy(tiers).stragglers("persistent:3:x8").seed(1).faults(0.01, 0.01, 0.01)).run();
        final ScenarioResult bsp = new ScenarioRunner(new Scenario().workers(8).rounds(300)
            .schedule(SyncSchedule.parse("bsp")).stragglers("persistent:3:x8").seed(1).faults(0.01, 0.01, 0.01)).run();
        assertThat(r.allChecks()).as(r.schedule).isTrue();
        assertThat(r.decisions).isNotEmpty();
        assertThat(r.decisions.get(0).from).isEqualTo("old: bsp");
        assertThat(r.decisions.get(0).to).isEqualTo("old: bsp+timeout:20");
        assertThat(r.schedule).contains("group 1 {3}: bsp@0,bsp+timeout:20@");
        assertThat(r.folded).as("the old worker's late gradients fold into its next round").isPositive();
        assertThat(r.cumulativeWaitingNs).isLessThan(bsp.cumulativeWaitingNs);
        assertThat(r.jctNs).isLessThan(bsp.jctNs);
    }

    @Test
    void aTimeoutRelativeToTheRoundTimeFollowsTheRoundsAndKeepsTheInvariants() {
        final Policy relative = PolicyParser.parse("policy relative\nstart bsp\nwhen round >= 20 then bsp + timeout(35%) + drop");
        final String jitter = "transient:p=0.1,x4";
        final ScenarioResult r = new ScenarioRunner(new Scenario().workers(8).rounds(300)
            .policy(relative).stragglers(jitter).seed(5).faults(0.01, 0.01, 0.01)).run();
        final ScenarioResult bsp = new ScenarioRunner(new Scenario().workers(8).rounds(300)
            .schedule(SyncSchedule.parse("bsp")).stragglers(jitter).seed(5).faults(0.01, 0.01, 0.01)).run();
        assertThat(r.allChecks()).as(r.schedule).isTrue();
        assertThat(r.decisions).isNotEmpty();
        final Controller.Decision first = r.decisions.get(0);
        assertThat(first.from).isEqualTo("bsp");
        assertThat(first.firstRound).isGreaterThan(20);
        assertThat(first.reason).startsWith("round >= 20");
        // installed in milliseconds: 35% of the lower quartile of the simulated round times
        final long timeoutNs = SyncConfigParser.parse(first.to).timeoutNs();
        assertThat(timeoutNs).isPositive().isLessThan(bsp.jctNs / 300);
        assertThat(r.decisions.stream().skip(1)).as("later decisions only move the timeout")
            .allSatisfy(d -> assertThat(d.reason).startsWith("typical round time"));
        assertThat(r.timeoutReleases).isPositive();
        assertThat(r.dropped).as("a late gradient is dropped").isPositive();
        assertThat(r.jctNs).isLessThan(bsp.jctNs);
    }
}
