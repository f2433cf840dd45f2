package io.serene.worker;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** When a worker expects its aggregates, against hand-computed medians and minima. */
class ArrivalsTest {
    private static final long MS = 1_000_000L;

    @Test
    void expectsAnAggregateAfterTheMedianLatencyAndCallsItLateAComputeTimeAfter() {
        final Arrivals a = new Arrivals();
        assertThat(a.typicalComputeNs()).isZero();
        assertThat(a.expectedNs(100 * MS)).as("nothing known: expected at once").isEqualTo(100 * MS);
        for (final long ms : new long[] {5, 7, 6, 30, 6}) {
            a.computed(ms * MS);
        }
        // latencies 10, 40, 12, 11, 90 ms: median 12
        final long[][] sentArrived = {{0, 10}, {100, 140}, {200, 212}, {300, 311}, {400, 490}};
        for (final long[] p : sentArrived) {
            a.arrived(p[0] * MS, p[1] * MS);
        }
        assertThat(a.typicalComputeNs()).as("median of 5, 6, 6, 7, 30").isEqualTo(6 * MS);
        assertThat(a.expectedNs(1000 * MS)).isEqualTo(1012 * MS);
        assertThat(a.lateNs(1000 * MS)).isEqualTo(1018 * MS);
    }

    @Test
    void anotherGradientFitsOnlyBeforeTheSoonestRecentArrivalAndNotAfterStraggling() {
        final Arrivals a = new Arrivals();
        for (final long ms : new long[] {4, 4, 4}) {
            a.computed(ms * MS);
        }
        a.arrived(0, 20 * MS);
        a.arrived(0, 30 * MS);
        a.arrived(0, 25 * MS);
        // soonest arrival 20 ms after the send; a gradient takes 4 ms
        assertThat(a.fitsAnother(16 * MS, 0)).isTrue();
        assertThat(a.fitsAnother(17 * MS, 0)).isFalse();
        // the last gradient took 12 ms, longer than each of the others: this worker straggled
        a.computed(12 * MS);
        assertThat(a.fitsAnother(0, 0)).isFalse();
        a.computed(4 * MS);
        assertThat(a.fitsAnother(0, 0)).isTrue();
        // 5 ms: above the others kept (4, 4, 12, 4)? no, 12 is among them
        a.computed(5 * MS);
        assertThat(a.fitsAnother(0, 0)).isTrue();
    }
}
