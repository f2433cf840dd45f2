package io.serene.harness.launch;

import io.serene.training.RoundRecord;
import io.serene.training.WorkerResult;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The training summary's figures on hand-computed records of 2 workers and 2 rounds. */
class TrainSummaryTest {
    private static final List<RoundRecord> ROUNDS = List.of(
        new RoundRecord(0, 0, 1.0, 0.1, 0.0, 0.2, 0, 32, 1.1, 1.5, false, false, 2.0f, null, null),
        new RoundRecord(1, 0, 1.0, 0.3, 0.1, 0.05, 0, 32, 1.4, 1.5, false, false, 2.1f, null, null),
        new RoundRecord(0, 1, 1.5, 0.1, 0.0, 0.3, 1, 32, 1.6, 2.0, false, false, 1.0f, 0.7, 2.1),
        new RoundRecord(1, 1, 1.5, 0.3, 0.0, 0.05, 0, 32, 1.9, 2.0, false, false, 1.1f, 0.9, 2.2));
    private static final List<WorkerResult> RESULTS = List.of(
        new WorkerResult(1, 2, 2.3 - 1.0, 1.0, 2.3, 0.6, 0.1, 0, 0, 64, true, 0.1, 0.1, false, "none", 1.0f, 0.8, "aa", 1),
        new WorkerResult(0, 2, 2.2 - 1.0, 1.0, 2.2, 0.2, 0.0, 0, 0, 64, true, 0.5, 0.1, false, "none", 1.2f, 0.8, "aa", 1));

    @Test
    void computesJctTimeToAccuracyWaitingAndComputeShare() {
        final Map<String, Object> s = TrainSummary.of(ROUNDS, RESULTS, 0.75);
        assertThat((double) s.get("jctSeconds")).isCloseTo(1.3, within(1e-9));
        assertThat((double) s.get("ttaSeconds")).as("round 1's mean 0.8, when the last worker evaluated it").isCloseTo(1.2, within(1e-9));
        assertThat((double) s.get("cumulativeWaitingSeconds")).isCloseTo(0.6, within(1e-9));
        assertThat((double) s.get("computeShare")).isCloseTo(0.9 / 2.5, within(1e-9));
        assertThat((double) s.get("finalAccuracy")).isCloseTo(0.8, within(1e-9));
        assertThat(s.get("modelHashes")).isEqualTo(List.of("aa", "aa"));
        assertThat(s.get("modelsEqual")).isEqualTo(true);
    }

    @Test
    void splitsBlockedTimeIntoCommunicationAndWaitingForPeers() {
        @SuppressWarnings("unchecked") final Map<String, Object> per = (Map<String, Object>) TrainSummary.of(ROUNDS, RESULTS, 0.75)
            .get("perRound");
        // communication: from the round's last send to the release, within each worker's blocked time
        assertThat((double) per.get("communicationSeconds")).isCloseTo((0.1 + 0.05 + 0.1 + 0.05) / 4, within(1e-9));
        assertThat((double) per.get("waitingForPeersSeconds")).isCloseTo((0.1 + 0 + 0.2 + 0) / 4, within(1e-9));
        assertThat((double) per.get("computeSeconds")).isCloseTo(0.8 / 4, within(1e-9));
        assertThat((double) per.get("evaluationSeconds")).isCloseTo(0.2 / 4, within(1e-9));
        assertThat((double) per.get("otherSeconds")).isCloseTo((2.5 - 0.9 - 0.6 - 0.2) / 4, within(1e-9));
    }

    @Test
    void reportsStalenessAndNoTimeToAnAccuracyNeverReached() {
        final Map<String, Object> s = TrainSummary.of(ROUNDS, RESULTS, 0.85);
        assertThat(s.get("ttaSeconds")).isNull();
        assertThat(s.get("staleness")).isEqualTo(Map.of("max", 1, "mean", 0.25, "histogram", Map.of("0", 3, "1", 1)));
        final Map<String, Object> reached = TrainSummary.of(ROUNDS, RESULTS, 0.8);
        assertThat((double) reached.get("ttaSeconds")).isCloseTo(1.2, within(1e-9));
    }
}
