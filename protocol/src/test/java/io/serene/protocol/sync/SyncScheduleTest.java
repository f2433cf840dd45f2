package io.serene.protocol.sync;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** A schedule as a job resumed at a later round sees it: the config in force then from 0, the rest moved back. */
class SyncScheduleTest {
    @Test
    void aScheduleSeenFromALaterRoundStartsWithTheConfigInForceThen() {
        final SyncSchedule schedule = SyncSchedule.parse("bsp@0,ssp:3@100,fastest:14@200,bsp@300");
        assertThat(schedule.from(0)).hasToString(schedule.toString());
        assertThat(schedule.from(150)).hasToString("ssp:3@0,bsp+fastest:14@50,bsp@150");
        assertThat(schedule.from(200)).hasToString("bsp+fastest:14@0,bsp@100");
        assertThat(schedule.from(1_000)).hasToString("bsp@0");
        for (int round = 150; round < 400; round += 7) {
            assertThat(schedule.from(150).configFor(round - 150)).isEqualTo(schedule.configFor(round));
        }
    }
}
