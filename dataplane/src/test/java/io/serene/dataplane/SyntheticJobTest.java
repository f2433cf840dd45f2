package io.serene.dataplane;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The made-up job the benchmark measures the pipeline with: the switch takes every packet of it. */
class SyntheticJobTest {
    @Test
    void shouldHaveEveryStepAggregatedAndReleasedRoundAfterRound() {
        for (final int k : new int[] {256, 8192}) {
            final int elements = 1 << 16;
            final int pool = elements / k / 2;
            final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().maxJobs(1).maxWorkers(4).chunkElements(k)
                .maxPoolSize(pool).roundRing(4).conclude(), ex -> {
                    throw new IllegalStateException(ex);
                });
            final int[] sent = new int[1];
            final SyntheticJob job = new SyntheticJob(pipeline, 1, 4, elements, k, pool, (port, buffer, offset, length) -> sent[0]++);
            final int steps = 5 * job.layout().stepsPerRound() + 3;
            job.steps(steps, 0, (port, buffer, offset, length) -> sent[0]++);
            assertThat(job.layout().exponentSteps()).as("K=%d", k).isPositive();
            assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).as("K=%d: %s", k, pipeline.counters()).isEqualTo(4L * steps);
            assertThat(pipeline.counters().get(SwitchCounter.RELEASES)).as("K=%d", k).isEqualTo(steps);
            assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_STEP) + pipeline.counters().get(SwitchCounter.DROP_AHEAD)
                + pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND)).isZero();
        }
    }
}
