package io.serene.node;

import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A controller's writes, in the run's rounds, reach a rebuilt job in its own rounds. */
class LocalSwitchControlTest {
    @Test
    void writesMoveToTheJobsRoundsFromItsBase() {
        final TableWrite install = TableWrite.install(SyncConfigEntry.builder().job(1).group(2).firstRound(30).config(SyncConfig.ssp(2)).build());
        final TableWrite moved = LocalSwitchControl.inJobRounds(install, 20);
        assertThat(moved.kind()).isEqualTo(TableWrite.Kind.INSTALL);
        assertThat(((SyncConfigEntry) moved.entry()).firstRound()).isEqualTo(10);
        assertThat(((SyncConfigEntry) moved.entry()).group()).isEqualTo(2);
        assertThat(((SyncConfigEntry) moved.entry()).config()).isEqualTo(SyncConfig.ssp(2));
        assertThat(LocalSwitchControl.inJobRounds(install, 0)).isSameAs(install);
        final TableWrite group = TableWrite.insert(WorkerGroupEntry.builder().job(1).worker(3).group(1).build());
        assertThat(LocalSwitchControl.inJobRounds(group, 20)).isSameAs(group);
    }
}
