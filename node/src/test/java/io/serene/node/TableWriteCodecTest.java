package io.serene.node;

import io.serene.controlplane.rpc.Update;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every kind of write to either table crosses the control service's wire and comes back equal. */
class TableWriteCodecTest {
    private static final int JOB = 7;

    @Test
    void everyWriteRoundTrips() {
        final SyncConfigEntry config = SyncConfigEntry.builder().job(JOB).group(2).firstRound(40)
            .config(SyncConfigParser.parse("ssp:3+timeout:25+exclude:1+drop").requireAbsolute()).build();
        final SyncConfigEntry busy = SyncConfigEntry.builder().job(JOB).group(0).firstRound(0)
            .config(SyncConfigParser.parse("psp:2,2+busy").requireAbsolute()).build();
        final WorkerGroupEntry group = WorkerGroupEntry.builder().job(JOB).worker(5).group(3).build();
        final List<TableWrite> writes = List.of(TableWrite.insert(config), TableWrite.modify(config), TableWrite.delete(config),
            TableWrite.install(config), TableWrite.install(busy), TableWrite.insert(group), TableWrite.modify(group),
            TableWrite.delete(group));
        for (final TableWrite write : writes) {
            final Update wire = TableWriteCodec.encode(write);
            assertThat(TableWriteCodec.decode(JOB, wire)).as("%s as %s", write, wire).isEqualTo(write);
        }
    }

    @Test
    void aBadUpdateSaysWhy() {
        assertThatThrownBy(() -> TableWriteCodec.decode(JOB, Update.newBuilder().setKind(Update.Kind.INSTALL)
            .setTable(Update.Table.WORKER_GROUP).setWorker(1).setGroup(1).build())).hasMessageContaining("sync_config entries only");
        assertThatThrownBy(() -> TableWriteCodec.decode(JOB, Update.newBuilder().setKind(Update.Kind.INSERT)
            .setTable(Update.Table.SYNC_CONFIG).setFirstRound(3).setConfig("ssp:").build())).isInstanceOf(IllegalArgumentException.class);
    }
}
