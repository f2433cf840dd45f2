package io.serene.training;

import io.serene.worker.RunClock;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

class ModelledStepsTest {
    /** A fake clock the waiter advances. */
    private long now;
    private final List<Long> waitedUntil = new ArrayList<>();

    private final RunClock fakeClock = new RunClock() {
        @Override
        public long nanoTime() {
            return now;
        }

        @Override
        public void parkUntil(final long deadlineNs) {
            waitedUntil.add(deadlineNs);
            now = Math.max(now, deadlineNs);
        }

        @Override
        public boolean awaitUntil(final CompletableFuture<?> future, final long deadlineNs) {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean virtual() {
            return false;
        }
    };

    private ModelledSteps fake() {
        return new ModelledSteps(fakeClock, () -> now);
    }

    @Test
    void aStepThatFitsIsWaitedOutToItsModelledTime() throws InterruptedException {
        final ModelledSteps steps = fake();
        now = 1_000;
        final long start = now;
        steps.begin();
        now += 3_000_000;
        assertThat(steps.finish(40_000_000)).as("the real compute").isEqualTo(3_000_000);
        assertThat(now).as("the step ends at its modelled time").isEqualTo(start + 40_000_000);
        assertThat(waitedUntil).containsExactly(start + 40_000_000);
        assertThat(steps.overrunSteps()).isZero();
        assertThat(steps.steps()).isEqualTo(1);
    }

    @Test
    void theHostsOwnWorkSinceTheLastWaitIsInsideTheStepNotAddedToIt() throws InterruptedException {
        final ModelledSteps steps = fake();
        now = 1_000;
        steps.waited();
        final long ready = now;
        // applying the aggregate and drawing the batch on the host: 5 ms, then 3 ms of compute
        now += 5_000_000;
        steps.begin();
        now += 3_000_000;
        assertThat(steps.finish(40_000_000)).as("the real compute alone").isEqualTo(3_000_000);
        assertThat(now).as("the step opened when the worker stopped waiting").isEqualTo(ready + 40_000_000);
        // no wait since: the next step opens where this one ended, the hand-off between them inside it
        final long end = now;
        now += 2_000_000;
        steps.begin();
        steps.finish(40_000_000);
        assertThat(now).isEqualTo(end + 40_000_000);
        // a wait in between: the step opens when it ended
        now += 7_000_000;
        steps.waited();
        final long waited = now;
        now += 45_000_000;
        steps.begin();
        steps.finish(40_000_000);
        assertThat(steps.overrunSteps()).as("the host's work since the wait did not fit").isEqualTo(1);
        assertThat(steps.maxOverrunNs()).isEqualTo(now - waited - 40_000_000);
    }

    @Test
    void aStepThatOverranItsModelledTimeIsCountedAndNotWaited() throws InterruptedException {
        final ModelledSteps steps = fake();
        for (int i = 0; i < 10; i++) {
            steps.begin();
            now += i == 3 ? 5_000_000 : i == 7 ? 2_500_000 : 1_000_000;
            steps.finish(2_000_000);
        }
        assertThat(steps.steps()).isEqualTo(10);
        assertThat(steps.overrunSteps()).isEqualTo(2);
        assertThat(steps.overrunNs()).isEqualTo(3_000_000 + 500_000);
        assertThat(steps.maxOverrunNs()).isEqualTo(3_000_000);
        assertThat(waitedUntil).hasSize(8);
        assertThat(steps.hostNs()).isEqualTo(8 * 1_000_000 + 5_000_000 + 2_500_000);
        final ModelledSteps.Report r = steps.report();
        assertThat(r.overrunSteps()).isEqualTo(2);
        assertThat(r.maxOverrunSeconds()).isEqualTo(0.003);
    }

    @Test
    void aPauseTakesNoProcessor() throws InterruptedException {
        final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        final ModelledSteps steps = ModelledSteps.on(RunClock.HOST);
        final long cpu0 = threads.getCurrentThreadCpuTime();
        final long start = System.nanoTime();
        steps.begin();
        steps.finish(300_000_000);
        final long elapsed = System.nanoTime() - start;
        final long cpu = threads.getCurrentThreadCpuTime() - cpu0;
        assertThat(elapsed).as("waited out the modelled time").isGreaterThanOrEqualTo(300_000_000);
        assertThat(cpu).as("processor time of a 300 ms pause").isLessThan(30_000_000);
        assertThat(steps.overrunSteps()).isZero();
    }

    @Test
    void onAModelledDeviceAStragglersFactorAndPauseLengthenTheModelledStep() throws InterruptedException {
        final ModelledSteps steps = fake();
        final long start = now;
        steps.begin();
        now += 4_000_000;
        final ModelledSteps.Times t = steps.end(0, ComputeClock.WALL, 40_000_000, 2.5, 7_000_000, 1_000_000);
        assertThat(t.computeNs()).as("the modelled step").isEqualTo(40_000_000);
        assertThat(t.measuredNs()).isEqualTo(40_000_000);
        assertThat(t.injectedNs()).as("1.5 steps and the pause").isEqualTo(60_000_000 + 7_000_000);
        assertThat(t.hostNs()).isEqualTo(4_000_000);
        assertThat(now).isEqualTo(start + 107_000_000);
    }

    @Test
    void onTheHostsClockAStragglerWaitsOutAMultipleOfItsComputeLessTheViewItPrepared() throws InterruptedException {
        final ModelledSteps steps = fake();
        final long start = now;
        steps.begin();
        now += 2_000_000;
        final ModelledSteps.Times t = steps.end(ComputeClock.WALL.nanos(), ComputeClock.WALL, 0, 3.0, 1_000_000, 500_000);
        assertThat(t.computeNs()).isEqualTo(2_000_000);
        assertThat(t.hostNs()).isEqualTo(2_000_000);
        assertThat(t.injectedNs()).as("2 x (2 - 0.5) ms and the pause").isEqualTo(4_000_000);
        assertThat(now).isEqualTo(start + 6_000_000);
        assertThat(steps.steps()).as("no modelled step").isZero();
    }
}
