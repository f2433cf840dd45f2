package io.serene.controlplane;

import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.table.SyncConfigEntry;
import org.junit.jupiter.api.Test;

import java.util.BitSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Golden tests: policies compiled to the sync_config writes they make. */
class PolicyCompilerTest {
    private static final String ADAPTIVE = String.join("\n",
        "policy adaptive",
        "start bsp",
        "when slowdown(worker) > 2.0 for 5 rounds then exclude(worker) fold",
        "when slowdown(worker) < 1.3 for 10 rounds then include(worker)",
        "when lag >= 2 for 3 rounds in bsp then ssp(2)",
        "when lag >= 3 for 20 rounds in ssp(2) then ssp(4) + timeout(50)",
        "when lag <= 1 for 20 rounds then bsp");

    @Test
    void theAdaptivePolicyCompilesToTheseWrites() {
        assertThat(PolicyCompiler.render(PolicyParser.parse(ADAPTIVE), 7, 4)).isEqualTo(String.join("\n",
            "policy adaptive for job 7 of 4 workers",
            "start: INSTALL sync_config{job=7, first_round=0} -> bsp [bound=0 required={0, 1, 2, 3} quorum=4 timeout=none late=fold]",
            "line 3: when slowdown(worker) > 2 for 5 rounds -> INSTALL sync_config{job=7, first_round=B} -> "
                + "BASE+exclude:W for the worker W it names",
            "line 4: when slowdown(worker) < 1.3 for 10 rounds -> INSTALL sync_config{job=7, first_round=B} -> "
                + "BASE with the worker W it names required again",
            "line 5: when lag >= 2 for 3 rounds in bsp -> INSTALL sync_config{job=7, first_round=B} -> "
                + "ssp:2+exclude:EXCLUDED [bound=2 required={0, 1, 2, 3} quorum=4 timeout=none late=fold]",
            "line 6: when lag >= 3 for 20 rounds in ssp:2 -> INSTALL sync_config{job=7, first_round=B} -> "
                + "ssp:4+timeout:50+exclude:EXCLUDED [bound=4 required={0, 1, 2, 3} quorum=4 timeout=50.0ms late=fold]",
            "line 7: when lag <= 1 for 20 rounds -> INSTALL sync_config{job=7, first_round=B} -> "
                + "bsp+exclude:EXCLUDED [bound=0 required={0, 1, 2, 3} quorum=4 timeout=none late=fold]",
            "B: the earliest safe round when the rule fires (earliest_swap_round); INSTALL: insert at B, replacing entries from B "
                + "on; BASE: the config in force without exclusions; EXCLUDED: the workers excluded then (none: nothing appended)",
            ""));
        assertThat(PolicyCompiler.startEntry(PolicyParser.parse(ADAPTIVE), 7))
            .isEqualTo(SyncConfigEntry.builder().job(7).firstRound(0).config(SyncConfig.bsp()).build());
    }

    @Test
    void aPolicyWithGroupsWritesTheirMembershipAndEntriesPerGroup() {
        final Policy tiers = PolicyParser.parse(String.join("\n",
            "policy tiers",
            "group old = 3",
            "start bsp",
            "start old: bsp + timeout(30)",
            "when lag >= 2 for 3 rounds in old: bsp + timeout(30) then old: fastest(1) + ssp(2)",
            "when slowdown(worker) > 4 for 5 rounds then exclude(worker) drop"));
        assertThat(PolicyCompiler.render(tiers, 2, 4)).isEqualTo(String.join("\n",
            "policy tiers for job 2 of 4 workers",
            "start: INSERT worker_group{job=2, worker=3} -> 1",
            "start: INSTALL sync_config{job=2, first_round=0} -> bsp [bound=0 required={0, 1, 2} quorum=3 timeout=none late=fold]",
            "start: INSTALL sync_config{job=2, group=1, first_round=0} -> bsp+timeout:30 [bound=0 required={3} quorum=1 "
                + "timeout=30.0ms late=fold]",
            "line 5: when lag >= 2 for 3 rounds in old: bsp+timeout:30 -> INSTALL sync_config{job=2, group=1, first_round=B} -> "
                + "ssp:2+fastest:1+exclude:EXCLUDED [bound=2 required={} quorum=1 timeout=none late=fold]",
            "line 6: when slowdown(worker) > 4 for 5 rounds -> INSTALL sync_config{job=2, first_round=B} -> "
                + "BASE+exclude:W+drop for the worker W it names (the entry of W's group)",
            "B: the earliest safe round when the rule fires (earliest_swap_round); INSTALL: insert at B, replacing entries from B "
                + "on; BASE: the config in force without exclusions; EXCLUDED: the workers excluded then (none: nothing appended)",
            ""));
        assertThat(PolicyCompiler.startWrites(tiers, 2, 4)).hasSize(3);
        assertThatThrownBy(() -> PolicyCompiler.compile(tiers, 2, 3)).hasMessage("groups: group old names worker 3, not in a job of 3 workers");
        assertThatThrownBy(() -> PolicyCompiler.compile(PolicyParser.parse("group g = 0\nwhen lag >= 1 then g: fastest(2)"), 1, 4))
            .hasMessage("line 2: quorum 2 exceeds the group's 1 workers");
    }

    @Test
    void aRelativeTimeoutCompilesToAShareOfTheTypicalRoundTime() {
        final Policy p = PolicyParser.parse("policy late\nstart bsp\nwhen round >= 20 then bsp + timeout(30%) + drop");
        assertThat(PolicyCompiler.render(p, 1, 4)).contains(
            "line 3: when round >= 20 for 1 rounds -> INSTALL sync_config{job=1, first_round=B} -> bsp+timeout:30%+drop+exclude:EXCLUDED "
                + "[bound=0 required={0, 1, 2, 3} quorum=4 timeout=30% of the typical round time (TYPICAL) late=drop]",
            "; TYPICAL: the lower quartile of the last 16 round times, installed again when it moves by a fifth\n");
    }

    @Test
    void aConfigThatCannotFitTheJobFailsNamingItsLine() {
        assertThatThrownBy(() -> PolicyCompiler.compile(PolicyParser.parse("start bsp\nwhen lag >= 2 then fastest(9)"), 1, 4))
            .hasMessage("line 2: quorum 9 exceeds the job's 4 workers");
        assertThatThrownBy(() -> PolicyCompiler.compile(PolicyParser.parse("start quorum(5)"), 1, 4))
            .hasMessageStartingWith("start: quorum 5 exceeds");
    }

    @Test
    void theEntryAGroupGetsHasItsExcludedMembersAndAnAbsoluteTimeout() {
        final BitSet out = new BitSet();
        out.set(2);
        final SyncConfig relative = SyncConfigParser.parse("bsp+timeout:50%");
        assertThat(PolicyCompiler.entryConfig(relative, new BitSet(), LateMode.FOLD, 0))
            .as("no round measured yet: no timeout").isEqualTo(SyncConfigParser.parse("bsp"));
        assertThat(PolicyCompiler.entryConfig(relative, out, LateMode.DROP, 8_000_000))
            .isEqualTo(SyncConfigParser.parse("bsp+timeout:4+exclude:2+drop"));
        assertThat(PolicyCompiler.install(3, 1, 40, SyncConfigParser.parse("ssp:2")).toString())
            .isEqualTo("INSTALL sync_config{job=3, group=1, first_round=40} -> ssp:2");
    }

    @Test
    void aControllerOnSwitchTelemetryRefusesRulesOnWorkerTelemetry() {
        assertThatThrownBy(() -> PolicyCompiler.requireSwitchTelemetry(PolicyParser.parse("policy p\nstart bsp\nwhen staleness > 1 then bsp"),
            "in serene train")).hasMessageStartingWith("policy p: 'staleness > 1 for 1 rounds' needs worker-side telemetry; in serene train");
        PolicyCompiler.requireSwitchTelemetry(PolicyParser.parse("start bsp\nwhen lag >= 2 then ssp(2)"), "anywhere");
    }

    @Test
    void aPspEntryShowsItsSample() {
        assertThat(PolicyCompiler.render(PolicyParser.parse("start psp(2)"), 1, 4))
            .contains("start: INSTALL sync_config{job=1, first_round=0} -> bsp+sample:2 [bound=0 required={0, 1, 2, 3} sample=2 quorum=2");
    }
}
