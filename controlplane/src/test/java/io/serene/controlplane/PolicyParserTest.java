package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncConfigParser;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PolicyParserTest {
    private static final String ADAPTIVE = String.join("\n",
        "policy adaptive",
        "start bsp",
        "when lag >= 2 for 3 rounds then ssp(4)",
        "when lag <= 1 for 20 rounds then bsp",
        "when slowdown(worker) > 3.0 for 10 rounds then exclude(worker) fold",
        "when slowdown(worker) < 1.5 for 10 rounds then include(worker)");

    @Test
    void parsesTheIssueExampleIntoTheSamePolicyAsTheJavaApi() {
        final Policy parsed = PolicyParser.parse(ADAPTIVE);
        final Policy built = PolicyBuilder.policy("adaptive").start(SyncConfig.bsp())
            .when(Policy.Metric.LAG, Policy.Comparator.GE, 2).forRounds(3).then(SyncConfig.ssp(4))
            .when(Policy.Metric.LAG, Policy.Comparator.LE, 1).forRounds(20).then(SyncConfig.bsp())
            .when(Policy.Metric.SLOWDOWN, Policy.Comparator.GT, 3.0).forRounds(10).thenExclude(LateMode.FOLD)
            .when(Policy.Metric.SLOWDOWN, Policy.Comparator.LT, 1.5).forRounds(10).thenInclude()
            .build();
        assertThat(parsed).isEqualTo(built);
        assertThat(parsed.rules().get(0).toString()).isEqualTo("when lag >= 2 for 3 rounds then ssp:4");
        assertThat(parsed.rules().get(2).line).isEqualTo(5);
    }

    @Test
    void configsCombineAndCommentsAndBlankLinesAreIgnored() {
        final Policy p = PolicyParser.parse("# a comment\n\npolicy p\nstart ssp(2) + timeout(50) # trailing\n"
            + "when round_time > 40 then fastest(3) + drop\nwhen waiting_share >= 0.5 for 2 rounds then asp\n"
            + "when staleness < 0.5 then quorum(2)\n");
        assertThat(p.start()).isEqualTo(SyncConfig.ssp(2).withTimeoutNs(50_000_000L));
        assertThat(p.rules().get(0).action.config).isEqualTo(SyncConfig.bsp().requiringNone().withQuorum(3)
            .withLateMode(LateMode.DROP));
        assertThat(p.rules().get(1).metric).isEqualTo(Policy.Metric.WAITING_SHARE);
        assertThat(p.rules().get(2).action.config.quorum()).isEqualTo(2);
    }

    @Test
    void errorsNameLineAndColumnWithACaret() {
        assertThatThrownBy(() -> PolicyParser.parse("policy bad\nstart bsp\nwhen lag >= then ssp(4)\n"))
            .isInstanceOf(PolicyException.class)
            .hasMessage("3:13: expected a number after '>=', found 'then'\n  when lag >= then ssp(4)\n              ^");
        expectError("when lagg >= 2 then bsp", 1, 6, "unknown metric 'lagg'");
        expectError("when lag >= 2 for 0 rounds then bsp", 1, 19, "expected a whole number of rounds >= 1 after 'for'");
        expectError("when lag >= 2 for 3 laps then bsp", 1, 21, "expected 'rounds' after 'for 3'");
        expectError("when lag >= 2 then sspp(4)", 1, 20, "unknown config 'sspp'");
        expectError("when lag >= 2 then ssp(x)", 1, 24, "expected a whole number >= 0 in ssp(...)");
        expectError("when lag >= 2 then exclude(worker)", 1, 20, "exclude(worker) needs a per-worker condition");
        expectError("when slowdown(worker) > 3 then bsp", 1, 32, "a per-worker condition needs exclude(worker)");
        expectError("when lag >= 2 then bsp extra", 1, 24, "unexpected 'extra' after the statement");
        expectError("start bsp + ssp(2)", 1, 13, "at most one of bsp, asp, ssp");
        expectError("begin bsp", 1, 1, "expected 'policy', 'group', 'start', 'smooth', 'auto' or 'when', found 'begin'");
        expectError("when lag => 2 then bsp", 1, 10, "expected a comparison (>=, <=, >, <, ==) after 'lag', found '='");
        expectError("when lag >= 2 then bsp ; x", 1, 24, "unexpected character ';'");
        expectError("start timeout(0)", 1, 15, "expected milliseconds > 0");
        expectError("start bsp\nstart ssp(1)", 2, 1, "a policy has one start config");
        expectError("when lag >= 2 in sspp(2) then bsp", 1, 18, "unknown config 'sspp'");
        expectError("when slowdown(worker) > 2 in bsp then exclude(worker)", 1, 27, "'in CONFIG' guards config rules");
        expectError("when lag >= 2 in bsp ssp(2)", 1, 22, "expected 'then', 'for N rounds' or 'in CONFIG'");
        expectError("when round >= 20 then bsp + timeout(0%)", 1, 37, "expected a whole percent of the round time from 1 to 1000");
        expectError("when round >= 20 then bsp + timeout(2.5%)", 1, 37, "expected a whole percent");
        expectError("when round >= 20 then bsp + timeout(30%", 1, 40, "expected ')'");
        expectError("start bsp + timeout(30%)", 1, 7, "a start config cannot have a relative timeout (timeout(30%))");
        expectError("when round >= 1 then bsp % 3", 1, 26, "unexpected '%' after the statement");
    }

    @Test
    void aTimeoutCanBeAShareOfTheRoundTimeAndRoundIsAMetric() {
        final Policy p = PolicyParser.parse("policy late\nstart bsp\nwhen round >= 20 then bsp + timeout(30%) + drop\n"
            + "when round_time > 500 in bsp + timeout(30%) + drop then bsp");
        assertThat(p.rules().get(0).metric).isEqualTo(Policy.Metric.ROUND);
        assertThat(p.rules().get(0).action.config).isEqualTo(SyncConfig.bsp().withTimeoutPercent(30).withLateMode(LateMode.DROP));
        assertThat(p.rules().get(1).in).isEqualTo(p.rules().get(0).action.config);
        assertThat(p.rules().get(0).toString()).isEqualTo("when round >= 20 for 1 rounds then bsp+timeout:30%+drop");
        assertThat(PolicyBuilder.policy("late").start(SyncConfig.bsp())
            .when(Policy.Metric.ROUND, Policy.Comparator.GE, 20).then(SyncConfigParser.parse("bsp+timeout:30%+drop"))
            .when(Policy.Metric.ROUND_TIME, Policy.Comparator.GT, 500).in(SyncConfigParser.parse("bsp+timeout:30%+drop"))
            .then(SyncConfig.bsp())
            .build()).isEqualTo(p);
    }

    @Test
    void failedWorkerIsAPerWorkerConditionAloneOrCompared() {
        final Policy p = PolicyParser.parse("policy dead\nstart bsp\nwhen failed(worker) then exclude(worker) drop\n"
            + "when failed(worker) == 0 for 3 rounds then include(worker)");
        assertThat(p.rules().get(0).metric).isEqualTo(Policy.Metric.FAILED);
        assertThat(p.rules().get(0).toString()).isEqualTo("when failed(worker) == 1 for 1 rounds then exclude(worker) drop");
        assertThat(p).isEqualTo(PolicyBuilder.policy("dead").start(SyncConfig.bsp()).whenFailed().thenExclude(LateMode.DROP)
            .when(Policy.Metric.FAILED, Policy.Comparator.EQ, 0).forRounds(3).thenInclude().build());
        assertThat(PolicyParser.parse(p.toString())).as("its text reads back").isEqualTo(p);
        expectError("when failed(node) then exclude(worker)", 1, 13, "expected 'worker'");
    }

    @Test
    void smoothSetsTheSamplesSlowdownTakesTheMedianOfAndMatchesTheJavaApi() {
        assertThat(PolicyParser.parse("policy p\nstart bsp").smoothing()).isEqualTo(Policy.DEFAULT_SMOOTHING);
        final Policy parsed = PolicyParser.parse("policy p\nsmooth 3\nwhen slowdown(worker) > 5 then exclude(worker)");
        assertThat(parsed.smoothing()).isEqualTo(3);
        assertThat(parsed).isEqualTo(PolicyBuilder.policy("p").smooth(3)
            .when(Policy.Metric.SLOWDOWN, Policy.Comparator.GT, 5).thenExclude(LateMode.FOLD).build());
        assertThat(parsed).isNotEqualTo(PolicyBuilder.policy("p")
            .when(Policy.Metric.SLOWDOWN, Policy.Comparator.GT, 5).thenExclude(LateMode.FOLD).build());
        // the text form says it, and reads back as the same policy
        assertThat(parsed.toString()).contains("\nsmooth 3\n");
        assertThat(PolicyParser.parse(parsed.toString())).isEqualTo(parsed);
        assertThat(PolicyParser.parse("smooth 1").smoothing()).isEqualTo(1);
        assertThat(PolicyParser.parse("smooth 15").smoothing()).isEqualTo(15);
        expectError("smooth 0", 1, 8, "a whole number from 1 to 15, found '0'");
        expectError("smooth 16", 1, 8, "a whole number from 1 to 15, found '16'");
        expectError("smooth 2.5", 1, 8, "a whole number from 1 to 15, found '2.5'");
        expectError("smooth", 1, 7, "a whole number from 1 to 15, found the end of the line");
        expectError("smooth 3 rounds", 1, 10, "unexpected 'rounds' after the statement");
        expectError("smooth 3\nsmooth 5", 2, 1, "the policy already says smooth 3");
        expectError("group smooth = 1", 1, 7, "'smooth' is reserved");
        assertThatThrownBy(() -> PolicyBuilder.policy("p").smooth(0)).hasMessage("smooth N needs 1 <= N <= 15, was 0");
    }

    @Test
    void aRuleCanBeGuardedByTheConfigInForce() {
        final Policy parsed = PolicyParser.parse("start bsp\nwhen lag >= 3 for 10 rounds in ssp(2) then ssp(4)");
        final Policy built = PolicyBuilder.policy("unnamed").start(SyncConfig.bsp())
            .when(Policy.Metric.LAG, Policy.Comparator.GE, 3).forRounds(10).in(SyncConfig.ssp(2)).then(SyncConfig.ssp(4)).build();
        assertThat(parsed).isEqualTo(built);
        assertThat(parsed.rules().get(0).in).isEqualTo(SyncConfig.ssp(2));
        assertThat(parsed.rules().get(0).condition()).isEqualTo("lag >= 3 for 10 rounds in ssp:2");
        assertThatThrownBy(() -> PolicyBuilder.policy("p").when(Policy.Metric.SLOWDOWN, Policy.Comparator.GT, 2).in(SyncConfig.bsp()))
            .hasMessageContaining("'in CONFIG' guards config rules");
    }

    @Test
    void groupsHaveTheirOwnStartsGuardsAndActionsAndMatchTheJavaApi() {
        final Policy parsed = PolicyParser.parse(String.join("\n",
            "policy tiers",
            "group old = 3",
            "group new = 0, 1",
            "start bsp",
            "start old: bsp + timeout(20)",
            "when lag >= 2 for 3 rounds in old: bsp + timeout(20) then old: fastest(1) + ssp(2)",
            "when lag <= 1 for 20 rounds then new: ssp(1)"));
        final Policy built = PolicyBuilder.policy("tiers").group("old", 3).group("new", 0, 1).start(SyncConfig.bsp())
            .start("old", SyncConfig.bsp().withTimeoutNs(20_000_000L))
            .when(Policy.Metric.LAG, Policy.Comparator.GE, 2).forRounds(3).in("old", SyncConfig.bsp().withTimeoutNs(20_000_000L))
            .then("old", SyncConfig.fastest(1).withBound(2))
            .when(Policy.Metric.LAG, Policy.Comparator.LE, 1).forRounds(20).then("new", SyncConfig.ssp(1)).build();
        assertThat(parsed).isEqualTo(built);
        assertThat(parsed.groups()).extracting(g -> g.name + "=" + g.index).containsExactly("old=1", "new=2");
        assertThat(parsed.groupOf(4)).containsExactly(2, 2, 0, 1);
        assertThat(parsed.start(1)).isEqualTo(SyncConfig.bsp().withTimeoutNs(20_000_000L));
        assertThat(parsed.start(2)).isEqualTo(SyncConfig.bsp());
        assertThat(parsed.rules().get(0).inGroup).isEqualTo(1);
        assertThat(parsed.rules().get(0).action.group).isEqualTo(1);
        assertThat(parsed.rules().get(0).toString())
            .isEqualTo("when lag >= 2 for 3 rounds in old: bsp+timeout:20 then old: ssp:2+fastest:1");
        assertThatThrownBy(() -> parsed.groupOf(3)).hasMessage("group old names worker 3, not in a job of 3 workers");
    }

    @Test
    void groupErrorsNameLineAndColumn() {
        expectError("when lag >= 2 then slow: bsp", 1, 20, "unknown group 'slow' (declare it first: group NAME = W1, W2)");
        expectError("group a = 1\nwhen lag >= 2 then b: bsp", 2, 20, "unknown group 'b' (declared: a)");
        expectError("group bsp = 1", 1, 7, "'bsp' is reserved");
        expectError("group default = 1", 1, 7, "'default' is reserved");
        expectError("group a = 1\ngroup a = 2", 2, 7, "group a is already declared");
        expectError("group a = 1, 2\ngroup b = 2", 2, 11, "worker 2 is already in group a");
        expectError("group a = 1, 1", 1, 14, "worker 1 is named twice");
        expectError("group a = x", 1, 11, "expected a worker id");
        expectError("group a 1", 1, 9, "expected '='");
        expectError("group a = 1\ngroup b = 2\ngroup c = 3\ngroup d = 4", 4, 7, "at most 3 groups");
        expectError("group a = 1\nstart a: bsp\nstart a: ssp(1)", 3, 1, "group a already has a start config");
        expectError("start default: bsp", 1, 7, "the default group takes configs without a prefix");
    }

    private static void expectError(final String text, final int line, final int column, final String message) {
        assertThatThrownBy(() -> PolicyParser.parse(text))
            .isInstanceOf(PolicyException.class)
            .hasMessageStartingWith(line + ":" + column + ": ")
            .hasMessageContaining(message)
            .satisfies(ex -> {
                assertThat(((PolicyException) ex).line()).isEqualTo(line);
                assertThat(((PolicyException) ex).column()).isEqualTo(column);
            });
    }

    @Test
    void wbspAndBusyAreConfigs() {
        final Policy p = PolicyParser.parse("start wbsp\nwhen lag >= 2 then ssp(2) + busy");
        assertThat(p.start()).isEqualTo(SyncConfig.bsp().withBusy(true));
        assertThat(p.rules().get(0).action.config).isEqualTo(SyncConfig.ssp(2).withBusy(true));
        assertThatThrownBy(() -> PolicyParser.parse("start wbsp + ssp(1)")).hasMessageContaining("at most one of bsp, asp, ssp, psp, wbsp");
    }

    @Test
    void pspTakesASampleAndAnOptionalBound() {
        final Policy p = PolicyParser.parse("start psp(2)\nwhen lag >= 2 then psp(2, 3)\nwhen lag >= 5 then ssp(1) + sample(3)");
        assertThat(p.start()).isEqualTo(SyncConfig.bsp().withSample(2));
        assertThat(p.rules().get(0).action.config).isEqualTo(SyncConfig.ssp(3).withSample(2));
        assertThat(p.rules().get(1).action.config).isEqualTo(SyncConfig.ssp(1).withSample(3));
        assertThatThrownBy(() -> PolicyParser.parse("start psp(0)")).hasMessageContaining("expected a whole number >= 1 in psp(...)");
    }

    @Test
    void autoParsesWithItsFloorAndRefusesRulesAndGroups() {
        final Policy p = PolicyParser.parse("policy mine\nstart bsp\nauto floor 80%");
        assertThat(p.auto()).isEqualTo(new Policy.Auto(80));
        assertThat(PolicyParser.parse(p.toString())).isEqualTo(p);
        assertThat(PolicyParser.parse("auto").auto().floorPercent()).isEqualTo(Policy.Auto.DEFAULT_FLOOR_PERCENT);
        assertThat(PolicyParser.builtIn(" auto ")).isEqualTo(Policy.auto(Policy.Auto.DEFAULT_FLOOR_PERCENT));
        assertThat(PolicyParser.builtIn("bsp")).isNull();
        assertThat(PolicyBuilder.policy("mine").auto(80).build()).isEqualTo(p);
        expectError("auto\nwhen lag >= 2 then ssp(2)", 1, 1, "an auto policy chooses the config itself: remove its when rules");
        expectError("group slow = 1\nauto", 2, 1, "remove its groups");
        expectError("auto floor 0%", 1, 12, "expected the share of the samples every round keeps, 1% to 100%");
        expectError("auto floor 75", 1, 12, "1% to 100%");
        expectError("auto sometimes", 1, 6, "expected 'floor P%'");
        expectError("auto\nauto", 2, 1, "already says auto");
    }
}
