package io.serene.harness.experiment;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ComparisonTest {
    private static ExperimentRow row(final String policy, final long seed, final double jct, final Double tta, final double accuracy,
                                     final String clock) {
        return new ExperimentRow("mlp-w4-none", "mlp", 4, "none", policy, seed, jct, tta, 1.0, 0.9, accuracy, 0, clock);
    }

    @Test
    void cellsArePairedBySeedAndAgreeWithinTheirTolerances() {
        final List<ExperimentRow> wall = List.of(row("bsp", 1, 40, 20.0, 0.83, "modelled"), row("bsp", 2, 44, 22.0, 0.83, "modelled"),
            row("bsp", 3, 50, 30.0, 0.80, "modelled"), row("ssp:10", 1, 36, null, 0.78, "modelled"),
            row("asp", 1, 30, 10.0, 0.80, "modelled"));
        // seed 3 only on the wall clock: not compared; ssp:10 never reaches the target in either; asp off by 0.6 points
        final List<ExperimentRow> virtual = List.of(row("bsp", 1, 36, 19.0, 0.83, "virtual"), row("bsp", 2, 40, 21.4, 0.831, "virtual"),
            row("ssp:10", 1, 32, null, 0.782, "virtual"), row("asp", 1, 30, 10.0, 0.794, "virtual"));
        final List<Comparison.Cell> cells = Comparison.of(wall, virtual);
        assertThat(cells).extracting(Comparison.Cell::policy).containsExactly("bsp", "ssp:10", "asp");
        final Comparison.Cell bsp = cells.get(0);
        assertThat(bsp.seeds()).containsExactly(1L, 2L);
        assertThat(bsp.ttaA()).isEqualTo(21.0);
        assertThat(bsp.ttaB()).isEqualTo(20.2);
        assertThat(bsp.agrees()).as("20.2 s against 21.0 s, 0.05 points").isTrue();
        assertThat(cells.get(1).ttaA()).isNull();
        assertThat(cells.get(1).agrees()).as("neither reaches the target; 0.2 points apart").isTrue();
        assertThat(cells.get(2).agrees()).as("0.6 points apart").isFalse();
        assertThat(new Comparison.Cell("s", "p", List.of(1L), 1, 1, 10.0, 11.5, 0.8, 0.8, "a", "b").agrees()).as("15% later").isFalse();
        assertThat(new Comparison.Cell("s", "p", List.of(1L), 1, 1, 10.0, null, 0.8, 0.8, "a", "b").agrees()).as("one never").isFalse();
    }
}
