package io.serene.systemtests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.serene.training.data.FashionMnist;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** {@code serene train} on the modelled clock: steps of the modelled device, stragglers as its pauses, the fidelity verdict. */
@Tag("slow")
class ModelledClockSystemTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static JsonNode train(final Path dir, final String name, final String... extra) throws Exception {
        final Path out = dir.resolve(name);
        final List<String> args = new ArrayList<>(List.of("train", "--rounds", "30", "--batch", "32", "--eval-every", "10", "--data",
            dir.toString(), "--seed", "3", "--out", out.toString(), "--json"));
        args.addAll(List.of(extra));
        return SereneProcess.lastJsonLine(SereneProcess.expectSuccess(args));
    }

    @Test
    @Timeout(300)
    void stepsLastTheModelledTimeStragglersLengthenThemAndTheRunSaysItWasFaithful(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        // worker-steps paused with probability 0.3 for exactly one step: a factor of 2 or 1
        final JsonNode s = train(dir, "modelled", "--workers", "2", "--step-time", "50ms", "--stragglers", "slow:p=0.3,pause=1.0-1.0");
        final JsonNode f = s.get("fidelity");
        assertThat(f.get("clock").asText()).isEqualTo("modelled");
        assertThat(f.get("steps").asLong()).isEqualTo(60);
        assertThat(f.get("faithful").asBoolean()).as(f.toString()).isTrue();
        assertThat(f.get("verdict").asText()).startsWith("faithful");
        assertThat(s.get("run").get("stepTime").asText()).isEqualTo("50ms");
        int paused = 0;
        for (final String line : Files.readAllLines(dir.resolve("modelled").resolve("records.jsonl"))) {
            final JsonNode r = JSON.readTree(line);
            assertThat(r.get("computeSeconds").asDouble()).as(line).isCloseTo(0.05, within(1e-9));
            final double injected = r.get("injectedSeconds").asDouble();
            assertThat(injected == 0 || Math.abs(injected - 0.05) < 1e-9).as(line).isTrue();
            paused += injected > 0 ? 1 : 0;
            assertThat(r.get("hostComputeSeconds").asDouble()).as("the host's compute, inside the modelled step: " + line)
                .isPositive().isLessThan(0.05);
        }
        assertThat(paused).as("about 0.3 of 60 steps paused").isBetween(8, 30);
        // BSP: a round lasts at least the slower worker's modelled step
        assertThat(s.get("jctSeconds").asDouble()).isGreaterThan(30 * 0.05);
    }

    @Test
    @Timeout(300)
    void aRunTheHostCannotKeepUpWithSaysItIsNotFaithfulAndWhy(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 2_000, 200, 5);
        // a 100 us step: no real forward and backward pass fits in it
        final JsonNode f = train(dir, "fast", "--workers", "4", "--step-time", "100us").get("fidelity");
        assertThat(f.get("clock").asText()).isEqualTo("modelled");
        assertThat(f.get("faithful").asBoolean()).isFalse();
        assertThat(f.get("overrunShare").asDouble()).isGreaterThan(0.01);
        assertThat(f.get("verdict").asText()).startsWith("NOT faithful").contains("could not keep up").contains("fewer workers");
        final JsonNode host = train(dir, "host", "--workers", "2").get("fidelity");
        assertThat(host.get("clock").asText()).isEqualTo("host");
        assertThat(host.get("faithful").asBoolean()).isFalse();
    }
}
