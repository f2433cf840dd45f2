package io.serene.training;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Room for deferred evaluation: one copy per evaluation round before the last, within a heap budget. */
class ModelCopiesTest {
    @Test
    void roomForEveryEvaluationRoundBeforeTheLast() {
        // 235 rounds, every 25: rounds 24, 49, ..., 224 (the last round is evaluated from the final model)
        assertThat(ModelCopies.forRun(235, 25, 10).capacity()).isEqualTo(9);
        // 250 rounds: round 249 is the last one, so still 9 copies
        assertThat(ModelCopies.forRun(250, 25, 10).capacity()).isEqualTo(9);
        assertThat(ModelCopies.forRun(251, 25, 10).capacity()).isEqualTo(10);
        assertThat(ModelCopies.forRun(235, 0, 10).capacity()).as("only the end").isZero();
        assertThat(ModelCopies.forRun(1, 1, 10).capacity()).isZero();
        assertThat(ModelCopies.forRun(235, 25, 10).size()).isZero();
    }

    @Test
    void moreCopiesThanTheBudgetAreAClearError() {
        // the MLP (101,770 parameters) evaluated every round of 1,000: 999 copies, 387 MiB
        assertThatThrownBy(() -> ModelCopies.forRun(1_000, 1, 101_770))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("deferred evaluation would keep 999 copies of the model (387 MiB, more than 192 MiB): raise --eval-every "
                + "or evaluate during training (--no-deferred-eval)");
        assertThat(ModelCopies.forRun(1_000, 25, 101_770).capacity()).isEqualTo(39);
    }
}
