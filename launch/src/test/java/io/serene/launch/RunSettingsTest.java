package io.serene.launch;

import io.serene.controlplane.PolicyParser;
import io.serene.training.TrainSettings;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What {@code --switch xdp} takes: every release rule the XDP program has, and a clear refusal of what it has not (worker groups, auto). */
class RunSettingsTest {
    private static RunSettings.Builder xdp(final String sync) {
        return RunSettings.builder().workers(4).training(TrainSettings.builder().build()).out(Path.of("unused")).sync(sync).xdp(true);
    }

    @Test
    void theXdpSwitchTakesTimeoutsAndQuorums() {
        for (final String sync : new String[] {"bsp", "ssp:3", "bsp+timeout:30", "bsp+timeout:30+drop", "ssp:2@0,bsp+timeout:20@40",
            "quorum:3", "psp:2", "psp:2+timeout:30"}) {
            assertThat(xdp(sync).build().xdp()).as(sync).isTrue();
        }
    }

    @Test
    void theXdpSwitchRefusesWorkerGroupsByName() throws IOException {
        final String tiers = Files.readString(Path.of("..", "examples", "tiers.policy"));
        assertThatThrownBy(() -> xdp("bsp").policy(PolicyParser.parse(tiers), null).build())
            .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("--switch xdp").hasMessageContaining("worker groups");
    }
}
