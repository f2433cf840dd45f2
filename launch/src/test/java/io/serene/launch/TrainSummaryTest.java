package io.serene.launch;

import io.serene.training.Json;
import io.serene.training.ModelledSteps;
import io.serene.training.RoundRecord;
import io.serene.training.WorkerResult;
import io.serene.transport.LinkModel;
import io.serene.transport.ModelledLink;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** The training summary's figures on hand-computed records of 2 workers and 2 rounds. */
class TrainSummaryTest {
    private static final List<RoundRecord> ROUNDS = List.of(
        new RoundRecord(0, 0, 1.0, 0.1, 0.0, 0.2, 0, 32, 1.1, 1.5, false, false, 2.0f, null, null, null),
        new RoundRecord(1, 0, 1.0, 0.3, 0.1, 0.05, 0, 32, 1.4, 1.5, false, false, 2.1f, null, null, null),
        new RoundRecord(0, 1, 1.5, 0.1, 0.0, 0.3, 1, 32, 1.6, 2.0, false, false, 1.0f, 0.7, 2.1, null),
        new RoundRecord(1, 1, 1.5, 0.3, 0.0, 0.05, 0, 32, 1.9, 2.0, false, false, 1.1f, 0.9, 2.2, null));
    private static final List<WorkerResult> RESULTS = List.of(
        new WorkerResult(1, 2, 2.3 - 1.0, 1.0, 2.3, 0.6, 0.1, 0, 0, 64, true, 0.1, 0.1, false, "none", 1.0f, 0.8, "aa", 1, null, null),
        new WorkerResult(0, 2, 2.2 - 1.0, 1.0, 2.2, 0.2, 0.0, 0, 0, 64, true, 0.5, 0.1, false, "none", 1.2f, 0.8, "aa", 1, null, null));

    @Test
    void computesJctTimeToAccuracyWaitingAndComputeShare() {
        final RunSummary s = TrainSummary.of(ROUNDS, RESULTS, 0.75);
        assertThat(s.jctSeconds()).isCloseTo(1.3, within(1e-9));
        assertThat(s.ttaSeconds()).as("round 1's mean 0.8, when the last worker evaluated it").isCloseTo(1.2, within(1e-9));
        assertThat(s.cumulativeWaitingSeconds()).isCloseTo(0.6, within(1e-9));
        assertThat(s.computeShare()).isCloseTo(0.9 / 2.5, within(1e-9));
        assertThat(s.finalAccuracy()).isCloseTo(0.8, within(1e-9));
        assertThat(s.modelHashes()).isEqualTo(List.of("aa", "aa"));
        assertThat(s.modelsEqual()).isTrue();
    }

    @Test
    void splitsBlockedTimeIntoCommunicationAndWaitingForPeers() {
        final RunSummary.PerRound per = TrainSummary.of(ROUNDS, RESULTS, 0.75).perRound();
        // communication: from the round's last send to the release, within each worker's blocked time
        assertThat(per.communicationSeconds()).isCloseTo((0.1 + 0.05 + 0.1 + 0.05) / 4, within(1e-9));
        assertThat(per.waitingForPeersSeconds()).isCloseTo((0.1 + 0 + 0.2 + 0) / 4, within(1e-9));
        assertThat(per.computeSeconds()).isCloseTo(0.8 / 4, within(1e-9));
        assertThat(per.evaluationSeconds()).isCloseTo(0.2 / 4, within(1e-9));
        assertThat(per.otherSeconds()).isCloseTo((2.5 - 0.9 - 0.6 - 0.2) / 4, within(1e-9));
    }

    @Test
    void theSummaryRoundTripsAsItsType() {
        final RunSummary s = TrainSummary.of(ROUNDS, RESULTS, 0.75).with(List.of(new RunSummary.ModeSwitch(1, 0, "bsp", "ssp:2", "why")),
            List.of(new RunSummary.Failure(2, 137, "killed by --faults kill:2@1 at round 1", 1)),
            List.of(new RunSummary.Relaunch("--faults restart:2@2", 0, true)), Map.of("workers", 2, "policy", "p"),
            Map.of("releases", 4L), 7, TrainSummary.fidelity(RESULTS, "0", LinkModel.NONE, 0.5, false, null));
        final String json = Json.write(s);
        assertThat(json).startsWith("{\"schemaVersion\":2,\"finalAccuracy\":0.8,");
        assertThat(Json.read(json, RunSummary.class)).isEqualTo(s);
    }

    @Test
    void reportsStalenessAndNoTimeToAnAccuracyNeverReached() {
        final RunSummary s = TrainSummary.of(ROUNDS, RESULTS, 0.85);
        assertThat(s.ttaSeconds()).isNull();
        assertThat(s.staleness()).isEqualTo(new RunSummary.Staleness(1, 0.25, Map.of("0", 3, "1", 1)));
        final RunSummary reached = TrainSummary.of(ROUNDS, RESULTS, 0.8);
        assertThat(reached.ttaSeconds()).isCloseTo(1.2, within(1e-9));
    }

    private static WorkerResult withSteps(final WorkerResult r, final ModelledSteps.Report device) {
        return withLink(r, device, null);
    }

    private static WorkerResult withLink(final WorkerResult r, final ModelledSteps.Report device, final ModelledLink.Report link) {
        return new WorkerResult(r.worker(), r.rounds(), r.seconds(), r.startSeconds(), r.endSeconds(), r.computeSeconds(),
            r.injectedSeconds(), r.skippedRounds(), r.droppedRounds(), r.samples(), r.rebalance(), r.waitingSeconds(),
            r.evaluationSeconds(), r.deferredEvaluation(), r.stragglers(), r.finalLoss(), r.finalAccuracy(), r.modelHash(), r.seed(), device, link);
    }

    @Test
    void aRunWithNoDeviceModelledIsOnTheHostsClockAndNeverFaithful() {
        final RunSummary.Fidelity f = TrainSummary.fidelity(RESULTS, "0", LinkModel.NONE, 0.97, false, null);
        assertThat(f.clock()).isEqualTo("host");
        assertThat(f.faithful()).isFalse();
        assertThat(f.verdict()).contains("this host's, not a cluster's").contains("97% busy");
    }

    @Test
    void aModelledRunIsFaithfulUpToOnePercentOfItsStepsOverrun() {
        final List<WorkerResult> held = List.of(withSteps(RESULTS.get(0), new ModelledSteps.Report(500, 5, 0.01, 0.004, 1.0)),
            withSteps(RESULTS.get(1), new ModelledSteps.Report(500, 5, 0.01, 0.002, 1.0)));
        final RunSummary.Fidelity ok = TrainSummary.fidelity(held, "40ms", LinkModel.NONE, null, false, 0.0061);
        assertThat(ok.clock()).isEqualTo("modelled");
        assertThat(ok.verdict()).as("the host's communication, which no link models, is named")
            .endsWith("communication at this host's speed (no --link-rate): 6.1 ms a round, on top of the model");
        assertThat(ok.faithful()).isTrue();
        assertThat(ok.overrunSteps()).isEqualTo(10);
        assertThat(ok.overrunShare()).isEqualTo(0.01);
        assertThat(ok.verdict()).startsWith("faithful").contains("10 of 1000 steps (1.0%)");

        final List<WorkerResult> over = List.of(withSteps(RESULTS.get(0), new ModelledSteps.Report(500, 6, 0.01, 0.004, 1.0)),
            withSteps(RESULTS.get(1), new ModelledSteps.Report(500, 5, 0.01, 0.002, 1.0)));
        final RunSummary.Fidelity not = TrainSummary.fidelity(over, "1ms", LinkModel.NONE, 0.99, false, null);
        assertThat(not.faithful()).isFalse();
        assertThat(not.maxOverrunMs()).isEqualTo(4.0);
        assertThat(not.verdict()).startsWith("NOT faithful").contains("11 of 1000 steps").contains("fewer workers")
            .contains("99% busy");
    }

    @Test
    void aModelledLinkIsJudgedByItsTransfersNotItsPackets() {
        final ModelledSteps.Report steps = new ModelledSteps.Report(500, 0, 0, 0, 1.0);
        final LinkModel link = new LinkModel(100_000_000L, 50_000);
        // many packets late inside transfers, but only 1 of 200 transfers ended late: faithful
        final RunSummary.Fidelity ok = TrainSummary.fidelity(List.of(withLink(RESULTS.get(0), steps, new ModelledLink.Report(
            90_000, 100, 1, 0, 3.0)), withLink(RESULTS.get(1), steps, new ModelledLink.Report(90_000, 100, 0, 0, 0))), "80ms", link, 0.5, false, null);
        assertThat(ok.faithful()).as(ok.verdict()).isTrue();
        assertThat(ok.linkTransfers()).isEqualTo(200);
        assertThat(ok.verdict()).contains("1 of 200 transfers (0.5%) ended more than 1 ms late on the modelled link of 100mbit");

        final RunSummary.Fidelity not = TrainSummary.fidelity(List.of(withLink(RESULTS.get(0), steps, new ModelledLink.Report(
            90_000, 100, 3, 0, 7.5))), "80ms", link, 0.5, false, null);
        assertThat(not.faithful()).isFalse();
        assertThat(not.verdict()).startsWith("NOT faithful").contains("by up to 7.5 ms").contains("could not keep up with the modelled link")
            .contains("a lower --link-rate");
    }
}
