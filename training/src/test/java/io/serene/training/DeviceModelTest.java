package io.serene.training;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DeviceModelTest {
    @Test
    void zeroModelsNothing() {
        final DeviceModel host = DeviceModel.parse("--step-time", "0");
        assertThat(host.modelled()).isFalse();
        assertThat(host.stepNs(ModelKind.MLP, 64, 64)).isZero();
    }

    @Test
    void aDurationIsTheStepOfTheRunsBatchAndScalesWithTheImages() {
        final DeviceModel d = DeviceModel.parse("--step-time", "40ms");
        assertThat(d.modelled()).isTrue();
        assertThat(d.stepNs(ModelKind.MLP, 64, 64)).isEqualTo(40_000_000L);
        assertThat(d.stepNs(ModelKind.CNN, 128, 64)).as("a rebalanced batch of twice the images").isEqualTo(80_000_000L);
        assertThat(DeviceModel.parse("x", "1.5s").stepNs(ModelKind.MLP, 32, 32)).isEqualTo(1_500_000_000L);
        assertThat(DeviceModel.parse("x", "500us").stepNs(ModelKind.MLP, 32, 32)).isEqualTo(500_000L);
        assertThat(DeviceModel.parse("x", "40ms")).isEqualTo(d);
    }

    @Test
    void aFileGivesEachModelsStepsLinearInTheBatch(@TempDir final Path dir) throws Exception {
        final Path file = dir.resolve("device.csv");
        Files.writeString(file, "# model,batch,ms\nmlp,32,10\nmlp,64,16\ncnn,64,50\n");
        final DeviceModel d = DeviceModel.parse("--step-time", file.toString());
        assertThat(d.stepNs(ModelKind.MLP, 32, 64)).isEqualTo(10_000_000L);
        assertThat(d.stepNs(ModelKind.MLP, 48, 64)).as("between two lines").isEqualTo(13_000_000L);
        assertThat(d.stepNs(ModelKind.MLP, 128, 64)).as("beyond them, proportional").isEqualTo(32_000_000L);
        assertThat(d.stepNs(ModelKind.MLP, 16, 64)).isEqualTo(5_000_000L);
        assertThat(d.stepNs(ModelKind.CNN, 64, 64)).isEqualTo(50_000_000L);
    }

    @Test
    void badValuesNameTheSettingAndTheSyntax(@TempDir final Path dir) throws Exception {
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", "40")).hasMessageContaining("--step-time").hasMessageContaining("unit");
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", "-5ms")).hasMessageContaining("--step-time");
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", "40 parsecs")).hasMessageContaining("unit");
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", "")).hasMessageContaining("empty");
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", dir.resolve("missing.csv").toString()))
            .hasMessageContaining("neither a duration nor a readable step-time file");
        final Path bad = dir.resolve("bad.csv");
        Files.writeString(bad, "mlp,64,16\nresnet,64,3\n");
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", bad.toString())).hasMessageContaining("line 2");
        final Path onlyCnn = dir.resolve("cnn.csv");
        Files.writeString(onlyCnn, "cnn,64,16\n");
        assertThatThrownBy(() -> DeviceModel.parse("--step-time", onlyCnn.toString()).stepNs(ModelKind.MLP, 64, 64))
            .hasMessageContaining("no line for model mlp");
    }
}
