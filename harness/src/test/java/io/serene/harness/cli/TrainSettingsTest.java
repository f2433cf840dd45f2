package io.serene.harness.cli;

import io.serene.training.ComputeClock;
import io.serene.training.ComputeOn;
import io.serene.training.DeviceModel;
import io.serene.training.LrSchedule;
import io.serene.training.ModelKind;
import io.serene.training.StaleMomentum;
import io.serene.training.TrainSettings;
import io.serene.transport.LinkModel;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.FloatRange;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Scale;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Training settings: one set of defaults, one validation, and arguments that parse back to equal settings. */
class TrainSettingsTest {
    private static TrainSettings parsed(final List<String> arguments) {
        final WorkerCommand worker = new WorkerCommand();
        final List<String> all = new ArrayList<>(List.of("--id", "0", "--workers", "2"));
        all.addAll(arguments);
        new CommandLine(worker).parseArgs(all.toArray(String[]::new));
        return worker.training.settings();
    }

    @Test
    void theCommandLineDefaultsAreTheBuildersDefaults() {
        assertThat(parsed(List.of())).isEqualTo(TrainSettings.builder().build());
        final TrainCommand train = new TrainCommand();
        new CommandLine(train).parseArgs();
        assertThat(train.training.settings()).isEqualTo(TrainSettings.builder().build());
        assertThat(TrainSettings.builder().build().epochs()).as("neither rounds nor epochs: one epoch").isEqualTo(1.0);
    }

    @Property(tries = 200)
    void argumentsParseBackToEqualSettings(@ForAll final boolean cnn, @ForAll @IntRange(min = 1, max = 10_000) final int rounds,
                                           @ForAll final boolean byEpochs, @ForAll @DoubleRange(min = 0.01, max = 20) @Scale(4) final double epochs,
                                           @ForAll @IntRange(min = 1, max = 512) final int batch, @ForAll final boolean rebalance,
                                           @ForAll @FloatRange(min = 0.001f, max = 2f) @Scale(4) final float lr,
                                           @ForAll @FloatRange(min = 0f, max = 0.99f) final float momentum,
                                           @ForAll final LrSchedule schedule, @ForAll final StaleMomentum stale,
                                           @ForAll final ComputeClock clock, @ForAll final ComputeOn on,
                                           @ForAll @IntRange(max = 500) final int evalEvery,
                                           @ForAll final boolean deferred, @ForAll final long seed,
                                           @ForAll @IntRange(min = 1, max = 3600) final int timeout,
                                           @ForAll @IntRange(max = 3) final int device) {
        final String[] steps = {"0", "40ms", "1.5s", "500us"};
        final LinkModel[] links = {LinkModel.NONE, LinkModel.parse("100mbit", "50us"), LinkModel.parse("1gbit", "0"),
            LinkModel.parse("2.5mbit", "1ms")};
        final TrainSettings settings = TrainSettings.builder().model(cnn ? ModelKind.CNN : ModelKind.MLP)
            .stragglers("transient:p=0.1,x3").rounds(byEpochs ? null : rounds).epochs(byEpochs ? epochs : null).batch(batch)
            .rebalance(rebalance).learningRate(lr).momentum(momentum).lrSchedule(schedule).staleMomentum(stale).computeClock(clock).computeOn(on)
            .evalEvery(evalEvery).deferredEval(deferred).seed(seed).data(Path.of("/tmp/fashion")).timeoutSeconds(timeout)
            .device(DeviceModel.parse("--step-time", steps[device])).link(links[device]).build();
        assertThat(parsed(settings.arguments())).isEqualTo(settings);
        assertThat(settings.toBuilder().build()).isEqualTo(settings);
    }

    @Test
    void badSettingsAreRefusedNamingTheOption() {
        assertThatThrownBy(() -> TrainSettings.builder().momentum(1f).build()).hasMessage("--momentum must be in [0, 1), was 1.0");
        assertThatThrownBy(() -> TrainSettings.builder().learningRate(0f).build()).hasMessage("--lr must be positive, was 0.0");
        assertThatThrownBy(() -> TrainSettings.builder().rounds(5).epochs(1.0).build()).hasMessage("give --rounds or --epochs, not both");
        assertThatThrownBy(() -> TrainSettings.builder().timeoutSeconds(0).build()).hasMessageContaining("--timeout-seconds");
        assertThatThrownBy(() -> TrainSettings.builder().stragglers("sometimes").build()).hasMessageContaining("straggler");
        assertThatThrownBy(() -> parsed(List.of("--step-time", "40"))).hasMessageContaining("--step-time").hasMessageContaining("unit");
        assertThatThrownBy(() -> parsed(List.of("--link-rate", "100mb"))).hasMessageContaining("--link-rate");
        assertThatThrownBy(() -> parsed(List.of("--link-delay", "1ms"))).hasMessageContaining("--link-delay needs --link-rate");
        assertThatThrownBy(() -> parsed(List.of("--stragglers", "link:1:x4,rounds=1-9"))).hasMessageContaining("needs a modelled link");
        assertThat(parsed(List.of("--stragglers", "link:1:x4,rounds=1-9", "--link-rate", "100mbit")).link().bitsPerSecond())
            .isEqualTo(100_000_000L);
        assertThatThrownBy(() -> parsed(List.of("--lr-schedule", "linear")))
            .hasMessage("--lr-schedule must be constant, cosine or cooldown, was 'linear'");
    }
}
