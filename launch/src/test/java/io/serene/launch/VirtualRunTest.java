package io.serene.launch;

import io.serene.controlplane.PolicyParser;
import io.serene.sim.Scenario;
import io.serene.sim.ScenarioResult;
import io.serene.sim.ScenarioRunner;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.DeviceModel;
import io.serene.training.TrainSettings;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** {@code serene train --clock virtual}: the same inputs give the same run, bit for bit, whatever the host does. */
class VirtualRunTest {
    private static final PrintStream QUIET = new PrintStream(OutputStream.nullOutputStream());

    private static RunSettings.Builder settings(final Path data, final Path out, final String stepTime) {
        final TrainSettings t = TrainSettings.builder().data(data).rounds(24).batch(32).evalEvery(6).seed(5)
            .stragglers("slow:p=0.2,pause=0.5-2.0").device(DeviceModel.parse("--step-time", stepTime)).build();
        return RunSettings.builder().workers(3).training(t).sync("ssp:2").out(out).virtual(true);
    }

    @Test
    void theSameInputsGiveTheSameSummaryAndRecordsWhileTheHostIsBusy(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 3_000, 200, 7);
        final RunSummary quiet = new TrainRun(settings(dir, dir.resolve("a"), "40ms").build(), QUIET).run();
        // the host's processors busy with two spinning threads: nothing in virtual time may notice
        final AtomicBoolean spin = new AtomicBoolean(true);
        final List<Thread> spinners = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            final Thread t = new Thread(() -> {
                long x = 0;
                while (spin.get()) {
                    x += System.nanoTime() % 7;
                }
                assertThat(x).isNotNegative();
            });
            t.start();
            spinners.add(t);
        }
        final RunSummary busy;
        try {
            busy = new TrainRun(settings(dir, dir.resolve("b"), "40ms").build(), QUIET).run();
        } finally {
            spin.set(false);
            for (final Thread t : spinners) {
                t.join();
            }
        }
        assertThat(Files.readString(dir.resolve("b").resolve("summary.json"))).isEqualTo(Files.readString(dir.resolve("a")
            .resolve("summary.json")));
        assertThat(Files.readString(dir.resolve("b").resolve("records.jsonl"))).isEqualTo(Files.readString(dir.resolve("a")
            .resolve("records.jsonl")));
        assertThat(busy.fidelity().clock()).isEqualTo("virtual");
        assertThat(busy.fidelity().faithful()).isTrue();
        // a step is the modelled 40 ms, stragglers pause it, and communication takes only the hop
        assertThat(quiet.perRound().computeSeconds()).isCloseTo(0.040, within(1e-9));
        assertThat(quiet.perRound().injectedSeconds()).isPositive();
        assertThat(quiet.perRound().communicationSeconds()).isLessThan(0.001);
        assertThat(quiet.jctSeconds()).isGreaterThanOrEqualTo(24 * 0.040);
    }

    @Test
    void aPolicyDecidesInVirtualTimeAsOnTheHostsClock(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 3_000, 200, 7);
        final TrainSettings t = TrainSettings.builder().data(dir).rounds(30).batch(32).evalEvery(10).seed(5)
            .stragglers("persistent:2:x8").device(DeviceModel.parse("--step-time", "40ms")).build();
        final RunSummary s = new TrainRun(RunSettings.builder().workers(4).training(t).policy(PolicyParser.builtIn("auto"), null)
            .out(dir.resolve("auto")).virtual(true).build(), QUIET).run();
        assertThat(s.switches()).as("auto excludes the 8x straggler").isNotEmpty();
        assertThat(s.switches().get(0).to()).contains("exclude:2");
        assertThat(s.fidelity().clock()).isEqualTo("virtual");
    }

    @Test
    void aStragglerBeyondAQuorumDropsOrKeepsItsGradientsAsInTheSimulator(@TempDir final Path dir) throws Exception {
        // RoundPlan's rules in the training loop: released while it computes, the 3x straggler drops its
        // gradient (drop) and skips the rounds released before it started, about one in three dropped;
        // or keeps each gradient for its next open round (fold), dropping none
        FashionMnist.writeSynthetic(dir, 3_000, 200, 7);
        final int rounds = 30;
        final int[][] droppedSkipped = new int[2][];
        final String[] configs = {"fastest:3+drop", "fastest:3+fold"};
        for (int i = 0; i < configs.length; i++) {
            final TrainSettings t = TrainSettings.builder().data(dir).rounds(rounds).batch(32).evalEvery(10).seed(5)
                .stragglers("persistent:3:x3").device(DeviceModel.parse("--step-time", "40ms")).build();
            final RunSummary s = new TrainRun(RunSettings.builder().workers(4).training(t).sync(configs[i])
                .out(dir.resolve("q" + i)).virtual(true).build(), QUIET).run();
            droppedSkipped[i] = new int[] {s.droppedRoundsPerWorker().get(3), s.skippedRoundsPerWorker().get(3)};
        }
        assertThat(droppedSkipped[0][0]).as("dropped under drop").isBetween(rounds / 4, rounds / 2);
        assertThat(droppedSkipped[0][0] + droppedSkipped[0][1]).as("it never contributes").isEqualTo(rounds);
        assertThat(droppedSkipped[1][0]).as("dropped under fold").isZero();
        assertThat(droppedSkipped[1][1]).isBetween(1, rounds - 1);
        // the simulator, on its own clock, drops about the same share
        final ScenarioResult sim = new ScenarioRunner(new Scenario().workers(4).rounds(100)
            .schedule(SyncSchedule.parse("fastest:3+drop")).stragglers("persistent:3:x3").seed(2)).run();
        assertThat(sim.droppedGradients / 100.0).isCloseTo(droppedSkipped[0][0] / (double) rounds, within(0.1));
    }

    @Test
    void whatVirtualTimeDoesNotRunIsRefusedByName(@TempDir final Path dir) {
        assertThatThrownBy(() -> settings(dir, dir, "0").build()).hasMessageContaining("--clock virtual: needs a modelled device");
        assertThatThrownBy(() -> settings(dir, dir, "40ms").checkpointEvery(10).build()).hasMessageContaining("no faults, checkpoints");
        assertThatThrownBy(() -> settings(dir, dir, "40ms").faults("kill:1@5").build()).hasMessageContaining("no faults");
        assertThatThrownBy(() -> RunSettings.virtualClock("--clock", "cpu")).hasMessageContaining("--clock must be wall");
    }
}
