package io.serene.protocol;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** docs/protocol.md's header table says what {@link Packet}'s constants say: offsets, sizes, the version, the length. */
class ProtocolDocTest {
    @Test
    void theHeaderTableMatchesTheWireConstants() throws IOException {
        Path root = Path.of("").toAbsolutePath();
        while (!Files.isRegularFile(root.resolve("docs/protocol.md"))) {
            root = root.getParent();
            assertThat(root).as("docs/protocol.md above the working directory").isNotNull();
        }
        final List<String> lines = Files.readAllLines(root.resolve("docs/protocol.md"), StandardCharsets.UTF_8);
        final Map<String, int[]> rows = new LinkedHashMap<>();
        String title = null;
        for (final String line : lines) {
            if (line.startsWith("## Header")) {
                title = line;
            } else if (title != null && line.startsWith("## ")) {
                break;
            } else if (title != null && line.matches("\\| \\d+ \\| \\d+ \\| .*")) {
                final String[] cells = line.split("\\|");
                rows.put(cells[3].strip(), new int[] {Integer.parseInt(cells[1].strip()), Integer.parseInt(cells[2].strip())});
                if (cells[3].strip().equals("version")) {
                    assertThat(cells[4].strip()).isEqualTo("`" + Packet.VERSION + "`");
                }
            }
        }
        assertThat(title).isEqualTo("## Header (" + Packet.HEADER_LENGTH + " bytes, every packet)");
        final Map<String, int[]> code = new LinkedHashMap<>();
        code.put("magic", new int[] {Packet.MAGIC_OFFSET, 2});
        code.put("version", new int[] {Packet.VERSION_OFFSET, 1});
        code.put("type", new int[] {Packet.TYPE_OFFSET, 1});
        code.put("flags", new int[] {Packet.FLAGS_OFFSET, 2});
        code.put("element count", new int[] {Packet.ELEMENT_COUNT_OFFSET, 2});
        code.put("job id", new int[] {Packet.JOB_ID_OFFSET, 4});
        code.put("worker id", new int[] {Packet.WORKER_ID_OFFSET, 2});
        code.put("exponent", new int[] {Packet.EXPONENT_OFFSET, 1});
        code.put("shadow set", new int[] {Packet.SHADOW_SET_OFFSET, 1});
        code.put("seq", new int[] {Packet.SEQ_OFFSET, 8});
        code.put("round", new int[] {Packet.ROUND_OFFSET, 4});
        code.put("chunk", new int[] {Packet.CHUNK_OFFSET, 4});
        code.put("config epoch", new int[] {Packet.CONFIG_EPOCH_OFFSET, 4});
        code.put("pool index", new int[] {Packet.POOL_INDEX_OFFSET, 2});
        code.put("status", new int[] {Packet.STATUS_OFFSET, 2});
        code.put("packet number", new int[] {Packet.PACKET_NUMBER_OFFSET, 8});
        code.put("MAC", new int[] {Packet.MAC_OFFSET, 8});
        assertThat(rows.keySet()).containsExactlyElementsOf(code.keySet());
        int next = 0;
        for (final Map.Entry<String, int[]> e : code.entrySet()) {
            assertThat(rows.get(e.getKey())).as(e.getKey()).containsExactly(e.getValue());
            assertThat(e.getValue()[0]).as(e.getKey() + " follows the field before it").isEqualTo(next);
            next = e.getValue()[0] + e.getValue()[1];
        }
        assertThat(next).isEqualTo(Packet.HEADER_LENGTH);
    }
}
