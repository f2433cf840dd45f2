package io.serene.protocol;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class RttEstimatorTest {
    @Test
    void shouldStartAtTheInitialTimeoutAndFollowSamples() {
        final RttEstimator rtt = new RttEstimator(20_000, 1_000, 1_000_000);
        assertThat(rtt.rtoNs()).isEqualTo(20_000);
        assertThat(rtt.srttNs()).isEqualTo(-1);
        rtt.sample(10_000);
        assertThat(rtt.srttNs()).isEqualTo(10_000);
        assertThat(rtt.rtoNs()).isEqualTo(2 * 10_000 + 4 * 5_000);
        for (int i = 0; i < 100; i++) {
            rtt.sample(10_000);
        }
        assertThat(rtt.rtoNs()).isBetween(20_000L, 21_000L);
    }

    @Test
    void shouldClampAndBackOff() {
        final RttEstimator rtt = new RttEstimator(5_000, 4_000, 100_000);
        rtt.sample(1);
        assertThat(rtt.rtoNs()).isEqualTo(4_000);
        assertThat(rtt.backedOffRtoNs(1)).isEqualTo(8_000);
        assertThat(rtt.backedOffRtoNs(10)).isEqualTo(100_000);
    }
}
