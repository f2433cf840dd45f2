package io.serene.training;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.offset;

class TrainChoicesTest {
    @Test
    void shouldParseEveryChoiceByItsLowerCaseNameAndNameTheChoicesOtherwise() {
        for (final LrSchedule s : LrSchedule.values()) {
            assertThat(LrSchedule.parse("--lr-schedule", s.text())).isEqualTo(s);
        }
        assertThat(WorkerJit.parse("--worker-jit", TrainDefaults.WORKER_JIT)).isEqualTo(WorkerJit.C1);
        assertThat(StaleMomentum.parse("x", TrainDefaults.STALE_MOMENTUM)).isEqualTo(StaleMomentum.AUTO);
        assertThat(StaleMomentum.AUTO.resolve(ComputeOn.APPLIED)).isEqualTo(StaleMomentum.COMPENSATE);
        assertThat(StaleMomentum.AUTO.resolve(ComputeOn.PREDICTED)).isEqualTo(StaleMomentum.FIXED);
        assertThat(StaleMomentum.COMPENSATE.resolve(ComputeOn.PREDICTED)).isEqualTo(StaleMomentum.COMPENSATE);
        assertThat(ComputeOn.parse("--compute-on", TrainDefaults.COMPUTE_ON)).isEqualTo(ComputeOn.PREDICTED);
        assertThatThrownBy(() -> LrSchedule.parse("--lr-schedule", "step"))
            .hasMessage("--lr-schedule must be constant, cosine or cooldown, was 'step'");
        assertThatThrownBy(() -> WorkerJit.parse("'workerJit'", "c2")).hasMessage("'workerJit' must be c1 or tiered, was 'c2'");
    }

    @Test
    void shouldCompensateMomentumForStalenessUnlessFixed() {
        assertThat(StaleMomentum.COMPENSATE.momentum(0.9f, 0)).isEqualTo(0.9f);
        assertThat(StaleMomentum.COMPENSATE.momentum(0.9f, 1)).isEqualTo(0.4f, offset(1e-6f));
        assertThat(StaleMomentum.COMPENSATE.momentum(0.9f, 4)).isEqualTo(0.1f, offset(1e-6f));
        assertThat(StaleMomentum.COMPENSATE.momentum(0.5f, 4)).isZero();
        assertThat(StaleMomentum.FIXED.momentum(0.9f, 4)).isEqualTo(0.9f);
    }

    @Test
    void shouldDeriveTheTypedDefaultsFromTheTextOnes() {
        assertThat(TrainDefaults.evalEvery()).isEqualTo(25);
        assertThat(TrainDefaults.batch()).isEqualTo(64);
        assertThat(TrainDefaults.learningRate()).isEqualTo(0.05f);
    }
}
