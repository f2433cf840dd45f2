package io.serene.protocol.sync;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import static org.assertj.core.api.Assertions.assertThat;

class StepLayoutProperties {
    @Property(tries = 300)
    void everyChunkHasOneValueStepAndEveryLookAheadExponentOneExponentStep(
        @ForAll @IntRange(min = 1, max = 5000) final int elements,
        @ForAll @IntRange(min = 1, max = 300) final int chunkElements,
        @ForAll @IntRange(min = 1, max = 64) final int poolSize) {
        final StepLayout layout = new StepLayout(elements, chunkElements, poolSize);
        final int[] valueSteps = new int[layout.chunks()];
        final int[] exponents = new int[layout.lookAhead()];
        int elementsCovered = 0;
        for (int t = 0; t < layout.stepsPerRound(); t++) {
            final int chunk = layout.chunkOf(t);
            final int n = layout.elementCount(t);
            assertThat(n).isBetween(1, chunkElements);
            if (layout.isValueStep(t)) {
                valueSteps[chunk]++;
                elementsCovered += n;
            } else {
                for (int c = chunk; c < chunk + n; c++) {
                    exponents[c]++;
                }
            }
        }
        assertThat(valueSteps).containsOnly(1);
        assertThat(exponents).containsOnly(1);
        assertThat(elementsCovered).isEqualTo(elements);
    }

    @Property(tries = 300)
    void seqRoundStepAndSlotsRoundTrip(
        @ForAll @IntRange(min = 1, max = 5000) final int elements,
        @ForAll @IntRange(min = 1, max = 300) final int chunkElements,
        @ForAll @IntRange(min = 1, max = 64) final int poolSize,
        @ForAll @IntRange(min = 0, max = 1_000_000) final int round) {
        final StepLayout layout = new StepLayout(elements, chunkElements, poolSize);
        for (int t = 0; t < layout.stepsPerRound(); t++) {
            final long seq = layout.seq(round, t);
            assertThat(layout.round(seq)).isEqualTo(round);
            assertThat(layout.step(seq)).isEqualTo(t);
            // a slot's previous use is the same slot of the other shadow set
            final long previous = StepLayout.previousUse(seq, poolSize);
            if (previous >= 0) {
                assertThat(layout.slot(previous)).isEqualTo(layout.slot(seq));
                assertThat(layout.shadowSet(previous)).isEqualTo(1 - layout.shadowSet(seq));
            } else {
                assertThat(seq).isLessThan(poolSize);
            }
        }
    }
}
