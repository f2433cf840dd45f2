package io.serene.xdp;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The Java side's map entry sizes and offsets against the C compiler's, for several dimensions (skips without clang). */
class XdpLayoutTest {
    private static final String PROBE = String.join("\n",
        "#include <linux/bpf.h>",
        "#include <stdio.h>",
        "#include <stddef.h>",
        "#include \"serene_xdp.h\"",
        "int main(void) {",
        "  printf(\"settings %zu\\njob %zu\\nworker %zu\\nport %zu\\nentry %zu\\nbank %zu\\ndyn %zu\\nslot %zu\\n\",",
        "    sizeof(struct serene_settings), sizeof(struct serene_job), sizeof(struct serene_worker), sizeof(struct serene_port),",
        "    sizeof(struct serene_entry), sizeof(struct serene_bank), sizeof(struct serene_dyn), sizeof(struct serene_slot));",
        "  printf(\"dyn.offsets %zu\\ndyn.late %zu\\ndyn.latch_round %zu\\ndyn.latch %zu\\nslot.timeout %zu\\n\",",
        "    offsetof(struct serene_dyn, offset_ns), offsetof(struct serene_dyn, late), offsetof(struct serene_dyn, latch_round),",
        "    offsetof(struct serene_dyn, latch), offsetof(struct serene_slot, timeout_ns));",
        "  printf(\"dyn.newest %zu\\n\", offsetof(struct serene_dyn, newest_round));",
        "  printf(\"dyn.clock %zu\\nslot.adding %zu\\nslot.bitmap %zu\\nbank.entry %zu\\nworker.seen %zu\\nport.own_mac %zu\\n\",",
        "    offsetof(struct serene_dyn, clock), offsetof(struct serene_slot, adding), offsetof(struct serene_slot, bitmap),",
        "    offsetof(struct serene_bank, entry), offsetof(struct serene_worker, seen), offsetof(struct serene_port, own_mac));",
        "  return 0;",
        "}");

    @ParameterizedTest
    @CsvSource({"4, 64, 64, 256, 64, 8", "1, 4, 61, 8192, 64, 8", "2, 100, 1000, 200, 17, 8", "1, 2, 3, 1, 1, 8"})
    void javaLayoutIsTheCompilers(final int jobs, final int workers, final int pool, final int chunk, final int ring, final int entries,
                                  @TempDir final Path dir) throws Exception {
        Assumptions.assumeTrue(XdpBuild.which("clang") != null && Files.exists(Path.of("/usr/include/linux/bpf.h")),
            "needs clang and the kernel headers");
        final XdpDimensions dims = new XdpDimensions(jobs, workers, pool, chunk, ring, entries);
        try (InputStream header = XdpBuild.class.getResourceAsStream("serene_xdp.h")) {
            Files.write(dir.resolve("serene_xdp.h"), header.readAllBytes());
        }
        Files.writeString(dir.resolve("probe.c"), PROBE);
        final List<String> command = new ArrayList<>(List.of("clang", "-I/usr/include/x86_64-linux-gnu", "-o", "probe", "probe.c"));
        command.addAll(List.of(dims.defines()));
        assertThat(new ProcessBuilder(command).directory(dir.toFile()).inheritIO().start().waitFor()).isZero();
        final Process probe = new ProcessBuilder(dir.resolve("probe").toString()).start();
        final String out = new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(probe.waitFor(10, TimeUnit.SECONDS)).isTrue();
        final Map<String, Integer> c = new LinkedHashMap<>();
        out.lines().forEach(l -> c.put(l.split(" ")[0], Integer.parseInt(l.split(" ")[1])));
        final XdpLayout layout = new XdpLayout(dims);
        assertThat(c.get("settings")).isEqualTo(XdpLayout.SETTINGS);
        assertThat(c.get("job")).isEqualTo(XdpLayout.JOB);
        assertThat(c.get("worker")).isEqualTo(XdpLayout.WORKER);
        assertThat(c.get("port")).isEqualTo(XdpLayout.PORT);
        assertThat(c.get("entry")).isEqualTo(layout.entryBytes());
        assertThat(c.get("bank")).isEqualTo(layout.bankBytes());
        assertThat(c.get("dyn")).isEqualTo(layout.dynBytes());
        assertThat(c.get("slot")).isEqualTo(layout.slotBytes());
        assertThat(c.get("dyn.clock")).isEqualTo(layout.clocksAt());
        assertThat(c.get("dyn.offsets")).isEqualTo(layout.offsetsAt());
        assertThat(c.get("slot.bitmap")).isEqualTo(56 + 8 * dims.words());
        assertThat(c.get("slot.timeout")).isEqualTo(48);
        assertThat(c.get("dyn.late")).isEqualTo(layout.lateAt());
        assertThat(c.get("dyn.latch_round")).isEqualTo(layout.latchRoundsAt());
        assertThat(c.get("dyn.latch")).isEqualTo(layout.latchAt());
        assertThat(c.get("dyn.newest")).isEqualTo(layout.newestAt());
        assertThat(c.get("slot.adding")).isEqualTo(44);
        assertThat(c.get("bank.entry")).isEqualTo(8 + 8 * dims.words());
        assertThat(c.get("worker.seen")).isEqualTo(32);
        assertThat(c.get("port.own_mac")).isEqualTo(20);
        assertThat(layout.freshDyn()).hasSize(layout.dynBytes());
        assertThat(layout.freshSlot()).hasSize(layout.slotBytes());
    }
}
