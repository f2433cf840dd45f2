package io.serene.training;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ComputeClockTest {

    @Test
    void theProcessorClockLeavesOutTimeTheThreadDidNotRun() {
        final ComputeClock cpu = ComputeClock.parse("--compute-clock", "cpu");
        final ComputeClock wall = ComputeClock.parse("--compute-clock", "wall");
        final long c0 = cpu.nanos();
        final long w0 = wall.nanos();
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
        final long parkedCpu = cpu.nanos() - c0;
        final long parkedWall = wall.nanos() - w0;
        assertThat(parkedWall).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(parkedCpu).as("processor time while parked 100 ms").isLessThan(TimeUnit.MILLISECONDS.toNanos(20));

        // busy work runs on the processor: its processor time grows with it
        final long b0 = cpu.nanos();
        long x = 1;
        final long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50);
        while (System.nanoTime() < until) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        assertThat(cpu.nanos() - b0).as("processor time of 50 ms of busy work (" + x + ")").isPositive();
    }

    @Test
    void anUnknownClockIsAnErrorNamingTheFlag() {
        assertThat(ComputeClock.parse("--compute-clock", "wall").text()).isEqualTo("wall");
        assertThatThrownBy(() -> ComputeClock.parse("--compute-clock", "gpu"))
            .isInstanceOf(IllegalArgumentException.class)
            .hasMessage("--compute-clock must be cpu or wall, was 'gpu'");
    }
}
