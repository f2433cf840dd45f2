package io.serene.launch.output;

import com.fasterxml.jackson.databind.JsonNode;
import com.google.protobuf.UnknownFieldSet;
import io.serene.training.Json;
import io.serene.training.RoundRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * TensorBoard event files and trace.json read back: the TFRecord framing and its CRCs checked, the
 * Event protocol buffers decoded with protobuf-java (not the writer's code), the trace parsed as JSON.
 */
class RunTracesTest {
    private static final List<RoundRecord> ROUNDS = List.of(
        new RoundRecord(0, 0, 1.0, 0.010, 0.0, 0.002, 0, 32, 1.012, 1.05, false, false, 2.25f, null, null, null),
        new RoundRecord(1, 0, 1.0, 0.011, 0.022, 0.001, 0, 32, 1.034, 1.05, false, false, 2.5f, null, null, null),
        new RoundRecord(0, 1, 1.05, 0.010, 0.0, 0.030, 1, 32, 1.09, 1.12, false, false, 1.75f, 0.625, 1.5, null),
        new RoundRecord(1, 1, 1.05, 0.011, 0.022, 0.001, 0, 32, 1.084, 1.12, false, false, 1.5f, 0.625, 1.5, null));
    private static final List<RunTraces.SyncChange> CHANGES = List.of(new RunTraces.SyncChange(0, "bsp", null),
        new RunTraces.SyncChange(1, "ssp:2", "lag >= 2 for 3 rounds"));

    @Test
    void eventFilesHoldEveryWorkersScalarsAndTheConfigAsText(@TempDir final Path dir) throws Exception {
        RunTraces.write(dir, "train test", ROUNDS, CHANGES, 1_700_000_000.0);
        final List<UnknownFieldSet> events = read(only(dir.resolve("tensorboard").resolve("worker-0")));
        assertThat(events.get(0).getField(3).getLengthDelimitedList().get(0).toStringUtf8()).isEqualTo("brain.Event:2");
        assertThat(Double.longBitsToDouble(events.get(0).getField(1).getFixed64List().get(0))).isEqualTo(1_700_000_001.0);
        final Map<String, List<double[]>> scalars = new LinkedHashMap<>();
        final List<String> texts = new ArrayList<>();
        for (final UnknownFieldSet e : events.subList(1, events.size())) {
            final long step = e.getField(2).getVarintList().isEmpty() ? 0 : e.getField(2).getVarintList().get(0);
            final UnknownFieldSet value = UnknownFieldSet.parseFrom(
                UnknownFieldSet.parseFrom(e.getField(5).getLengthDelimitedList().get(0)).getField(1).getLengthDelimitedList().get(0));
            final String tag = value.getField(1).getLengthDelimitedList().get(0).toStringUtf8();
            if (value.hasField(2)) {
                scalars.computeIfAbsent(tag, k -> new ArrayList<>())
                    .add(new double[] {step, Float.intBitsToFloat(value.getField(2).getFixed32List().get(0))});
            } else {
                final UnknownFieldSet tensor = UnknownFieldSet.parseFrom(value.getField(8).getLengthDelimitedList().get(0));
                assertThat(tensor.getField(1).getVarintList()).as("DT_STRING").containsExactly(7L);
                final UnknownFieldSet plugin = UnknownFieldSet.parseFrom(UnknownFieldSet.parseFrom(
                    value.getField(9).getLengthDelimitedList().get(0)).getField(1).getLengthDelimitedList().get(0));
                assertThat(plugin.getField(1).getLengthDelimitedList().get(0).toStringUtf8()).isEqualTo("text");
                texts.add(step + " " + tag + " " + tensor.getField(8).getLengthDelimitedList().get(0).toStringUtf8());
            }
        }
        assertThat(scalars.keySet()).containsExactly("loss", "time/compute_seconds", "time/injected_seconds", "time/waiting_seconds",
            "staleness", "batch", "sync/changes", "accuracy");
        assertThat(scalars.get("loss")).extracting(p -> p[1]).containsExactly(2.25, 1.75);
        assertThat(scalars.get("accuracy")).hasSize(1);
        assertThat(scalars.get("accuracy").get(0)).containsExactly(1, 0.625);
        assertThat(scalars.get("staleness")).extracting(p -> p[1]).containsExactly(0.0, 1.0);
        assertThat(scalars.get("sync/changes")).extracting(p -> p[1]).containsExactly(0.0, 1.0);
        assertThat(texts).containsExactly("0 sync/config bsp", "1 sync/config ssp:2 (lag >= 2 for 3 rounds)");
        assertThat(read(only(dir.resolve("tensorboard").resolve("worker-1")))).hasSize(events.size());
    }

    @Test
    void theTraceHasEachWorkersSlicesRoundsInFlightAndTheSwitch(@TempDir final Path dir) throws Exception {
        RunTraces.write(dir, "train test", ROUNDS, CHANGES, 0);
        assertThat(Json.read(Files.readString(dir.resolve("trace.json")), RunTraces.Trace.class)).as("trace.json reads back as its type")
            .isEqualTo(RunTraces.trace("train test", ROUNDS, CHANGES));
        final JsonNode trace = Json.MAPPER.readTree(dir.resolve("trace.json").toFile());
        assertThat(trace.path("traceEvents").get(0).has("dur")).as("absent members are left out").isFalse();
        final List<JsonNode> events = new ArrayList<>();
        trace.path("traceEvents").forEach(events::add);
        assertThat(events).filteredOn(e -> e.path("ph").asText().equals("M")).extracting(e -> e.path("args").path("name").asText())
            .containsExactlyInAnyOrder("serene train test", "worker 0", "worker 1");
        final JsonNode injected = events.stream().filter(e -> e.path("name").asText().equals("injected delay")).findFirst().orElseThrow();
        assertThat(injected.path("tid").asInt()).isEqualTo(1);
        assertThat(injected.path("ts").asDouble()).isCloseTo(12_000, within(1e-6));
        assertThat(injected.path("dur").asDouble()).isCloseTo(22_000, within(1e-6));
        final JsonNode compute = events.stream().filter(e -> e.path("name").asText().equals("compute") && e.path("tid").asInt() == 0)
            .findFirst().orElseThrow();
        assertThat(compute.path("ts").asDouble()).as("computed just before its send").isCloseTo(2_000, within(1e-6));
        assertThat(events).filteredOn(e -> e.path("ph").asText().equals("b")).hasSize(4);
        assertThat(events).filteredOn(e -> e.path("ph").asText().equals("e")).hasSize(4);
        final JsonNode sw = events.stream().filter(e -> e.path("ph").asText().equals("i")).findFirst().orElseThrow();
        assertThat(sw.path("name").asText()).isEqualTo("sync: ssp:2");
        assertThat(sw.path("s").asText()).isEqualTo("g");
        assertThat(sw.path("ts").asDouble()).isCloseTo(50_000, within(1e-6));
    }

    private static Path only(final Path dir) throws Exception {
        try (Stream<Path> files = Files.list(dir)) {
            final List<Path> all = files.toList();
            assertThat(all).hasSize(1);
            assertThat(all.get(0).getFileName().toString()).startsWith("events.out.tfevents.");
            return all.get(0);
        }
    }

    /** TFRecord: length, masked CRC of it, data, masked CRC of the data; every CRC checked. */
    static List<UnknownFieldSet> read(final Path file) throws Exception {
        final ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        final List<UnknownFieldSet> events = new ArrayList<>();
        while (b.hasRemaining()) {
            final byte[] len = new byte[8];
            b.get(len);
            final long length = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getLong();
            assertThat(b.getInt()).isEqualTo(TensorBoardWriter.masked(len, 0, 8));
            final byte[] data = new byte[(int) length];
            b.get(data);
            assertThat(b.getInt()).isEqualTo(TensorBoardWriter.masked(data, 0, data.length));
            events.add(UnknownFieldSet.parseFrom(data));
        }
        return events;
    }
}
