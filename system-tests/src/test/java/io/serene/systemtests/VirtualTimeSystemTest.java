package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** {@code serene train --clock virtual} against worker processes on the host's clock: one training loop, two clocks. */
@Tag("slow")
class VirtualTimeSystemTest {
    private static JsonNode train(final Path dir, final String name, final String... extra) throws Exception {
        final List<String> args = new ArrayList<>(List.of("train", "--workers", "2", "--policy", "bsp", "--rounds", "20", "--batch", "32",
            "--eval-every", "10", "--data", dir.toString(), "--seed", "4", "--step-time", "50ms", "--out", dir.resolve(name).toString(),
            "--json"));
        args.addAll(List.of(extra));
        return SereneProcess.lastJsonLine(SereneProcess.expectSuccess(args));
    }

    @Test
    @Timeout(300)
    void underBspAVirtualRunEndsWithTheModelOfAWallClockRun(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        final JsonNode wall = train(dir, "wall");
        final JsonNode virtual = train(dir, "virtual", "--clock", "virtual");
        assertThat(virtual.get("fidelity").get("clock").asText()).isEqualTo("virtual");
        assertThat(virtual.get("run").get("clock").asText()).isEqualTo("virtual");
        assertThat(wall.get("run").get("clock").asText()).isEqualTo("wall");
        assertThat(virtual.get("modelsEqual").asBoolean()).isTrue();
        assertThat(virtual.get("modelHashes").get(0).asText()).as("integer aggregation: the same sums in either clock")
            .isEqualTo(wall.get("modelHashes").get(0).asText());
        assertThat(virtual.get("finalAccuracy").asDouble()).isEqualTo(wall.get("finalAccuracy").asDouble());
        // virtual time is the modelled steps and nothing else; the host's clock adds its own work to every round
        assertThat(virtual.get("jctSeconds").asDouble()).isCloseTo(20 * 0.05, within(0.01));
        assertThat(wall.get("jctSeconds").asDouble()).isGreaterThan(virtual.get("jctSeconds").asDouble());
    }
}
