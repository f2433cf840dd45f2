package io.serene.transport;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FaultInjectorTest {
    @Test
    void sameSeedShouldGiveTheSameDecisions() {
        final FaultInjector a = new FaultInjector(42, 0.1, 0.05, 0.2);
        final FaultInjector b = new FaultInjector(42, 0.1, 0.05, 0.2);
        for (int i = 0; i < 10_000; i++) {
            assertThat(a.copies()).isEqualTo(b.copies());
            assertThat(a.reorder()).isEqualTo(b.reorder());
        }
    }

    @Test
    void ratesShouldMatchWhatWasAskedFor() {
        final FaultInjector faults = new FaultInjector(1, 0.1, 0.05, 0.2);
        final int n = 200_000;
        for (int i = 0; i < n; i++) {
            faults.copies();
            faults.reorder();
        }
        assertThat(faults.lost() / (double) n).isBetween(0.09, 0.11);
        assertThat(faults.duplicated() / (double) n).isBetween(0.04, 0.05);
        assertThat(faults.reordered() / (double) n).isBetween(0.19, 0.21);
    }

    @Test
    void shouldRejectRatesOutsideTheUnitInterval() {
        assertThatThrownBy(() -> new FaultInjector(1, 1.0, 0, 0)).hasMessageContaining("loss");
        assertThatThrownBy(() -> new FaultInjector(1, 0, -0.1, 0)).hasMessageContaining("duplicate");
        assertThat(FaultInjector.none().isActive()).isFalse();
    }
}
