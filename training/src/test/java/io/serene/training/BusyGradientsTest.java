package io.serene.training;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** WBSP's gradients computed while waiting go out with the round's own as one weighted mean. */
class BusyGradientsTest {
    @Test
    void shouldMergeTheHeldGradientsIntoTheRoundsOwnAsAWeightedMean(@TempDir final Path dir) throws Exception {
        final BusyGradients busy = new BusyGradients(2);
        try (RoundRecords log = new RoundRecords(0, 3, dir.resolve("r.jsonl"), null)) {
            final float[] own = {2f, 4f};
            busy.mergeInto(own, 1f, log, 0);
            assertThat(own).as("nothing held: unchanged").containsExactly(2f, 4f);
            // two held, each computed one round ahead and weighed 1/2 already: (1, 1) and (3, -1) at weight 1/2
            busy.add(new float[] {0.5f, 0.5f}, 0.5f, 32, 5_000_000L, 0L, 0L);
            busy.add(new float[] {1.5f, -0.5f}, 0.5f, 32, 6_000_000L, 1_000_000L, 0L);
            busy.mergeInto(own, 1f, log, 1);
            // (2 + 0.5 + 1.5) / 2 = 2, (4 + 0.5 - 0.5) / 2 = 2
            assertThat(own[0]).isCloseTo(2f, within(1e-6f));
            assertThat(own[1]).isCloseTo(2f, within(1e-6f));
            final float[] next = {1f, 1f};
            busy.mergeInto(next, 1f, log, 2);
            assertThat(next).as("merged once, then forgotten").containsExactly(1f, 1f);
            busy.add(new float[] {9f, 9f}, 1f, 32, 1L, 0L, 0L);
            busy.clear();
            busy.mergeInto(next, 1f, log, 2);
            assertThat(next).as("cleared").containsExactly(1f, 1f);
        }
    }
}
