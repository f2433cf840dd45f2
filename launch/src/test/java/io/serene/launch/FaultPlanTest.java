package io.serene.launch;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** --faults: kills, restarts of killed workers and switch restarts, and clear refusals of plans that cannot run. */
class FaultPlanTest {
    @Test
    void killsRestartsAndSwitchRestartsParseAndPrintBack() {
        final FaultPlan plan = FaultPlan.parse("kill:1@60, restart:1@80,switch-restart@100,switch-restart@150", 4);
        assertThat(plan.faults()).containsExactly(new FaultPlan.Fault(FaultPlan.Kind.KILL, 1, 60),
            new FaultPlan.Fault(FaultPlan.Kind.RESTART, 1, 80), new FaultPlan.Fault(FaultPlan.Kind.SWITCH_RESTART, -1, 100),
            new FaultPlan.Fault(FaultPlan.Kind.SWITCH_RESTART, -1, 150));
        assertThat(plan).hasToString("kill:1@60,restart:1@80,switch-restart@100,switch-restart@150");
        assertThat(plan.restartOf(1)).isEqualTo(new FaultPlan.Fault(FaultPlan.Kind.RESTART, 1, 80));
        assertThat(plan.restartOf(2)).isNull();
        assertThat(plan.relaunches()).isTrue();
        assertThat(FaultPlan.parse("kill:3@100", 4).relaunches()).isFalse();
        assertThat(FaultPlan.parse(" none ", 4)).isEqualTo(FaultPlan.NONE);
    }

    @Test
    void plansThatCannotRunAreRefusedSayingWhy() {
        assertThatThrownBy(() -> FaultPlan.parse("restart:1@80", 4)).hasMessage("--faults: restart:1@80 restarts worker 1, which no "
            + "earlier kill:1@R (R < 80) kills");
        assertThatThrownBy(() -> FaultPlan.parse("kill:1@80,restart:1@60", 4)).hasMessageContaining("no earlier kill:1@R (R < 60)");
        assertThatThrownBy(() -> FaultPlan.parse("kill:1@8,kill:1@9", 4)).hasMessageContaining("repeats a fault");
        assertThatThrownBy(() -> FaultPlan.parse("switch-restart@9,switch-restart@9", 4)).hasMessageContaining("repeats a fault");
        assertThatThrownBy(() -> FaultPlan.parse("kill:4@1", 4)).hasMessage("--faults: kill:4@1 names worker 4, the job has workers 0..3");
        assertThatThrownBy(() -> FaultPlan.parse("switch-restart:1@5", 4)).hasMessageContaining("unknown fault 'switch-restart:1@5'");
        assertThatThrownBy(() -> FaultPlan.parse("kill:1@99999999999", 4)).hasMessageContaining("out of range");
    }
}
