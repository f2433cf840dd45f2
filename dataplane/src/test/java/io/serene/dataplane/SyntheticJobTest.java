package io.serene.dataplane;

import io.serene.protocol.JobKeys;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.assertj.core.api.Assertions.assertThat;

class SyntheticJobTest {
    @Test
    void shouldHaveEveryStepAggregatedAndReleasedRoundAfterRoundSignedOrNot() {
        final byte[] secret = "a secret of more than sixteen bytes".getBytes(StandardCharsets.UTF_8);
        for (final boolean signed : new boolean[] {false, true}) {
            for (final int k : new int[] {256, 8192}) {
                final String what = "K=" + k + (signed ? ", signed" : "");
                final int elements = 1 << 16;
                final int pool = elements / k / 2;
                final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().maxJobs(1).maxWorkers(4).chunkElements(k)
                    .maxPoolSize(pool).roundRing(4).secret(signed ? secret : null).conclude(), ex -> {
                        throw new IllegalStateException(ex);
                    });
                final int[] sent = new int[1];
                final SyntheticJob job = new SyntheticJob(pipeline, 1, 4, elements, k, pool, (port, buffer, offset, length) -> sent[0]++,
                    signed ? new JobKeys.SwitchSecret(secret) : null);
                final int steps = 5 * job.layout().stepsPerRound() + 3;
                job.steps(steps, 0, (port, buffer, offset, length) -> sent[0]++);
                assertThat(job.layout().exponentSteps()).as(what).isPositive();
                assertThat(pipeline.counters().get(SwitchCounter.CONTRIBUTIONS)).as("%s: %s", what, pipeline.counters())
                    .isEqualTo(4L * steps);
                assertThat(pipeline.counters().get(SwitchCounter.RELEASES)).as(what).isEqualTo(steps);
                assertThat(pipeline.counters().get(SwitchCounter.DROP_BAD_STEP) + pipeline.counters().get(SwitchCounter.DROP_AHEAD)
                    + pipeline.counters().get(SwitchCounter.DROP_BEYOND_BOUND) + pipeline.counters().get(SwitchCounter.DROP_BAD_MAC)
                    + pipeline.counters().get(SwitchCounter.DROP_REPLAYED)).as(what).isZero();
            }
        }
    }
}
