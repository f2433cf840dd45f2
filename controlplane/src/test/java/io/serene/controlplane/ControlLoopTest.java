package io.serene.controlplane;

import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ControlLoopTest {
    private static final long MS = 1_000_000L;

    /** A switch that refuses the first install as TOO_EARLY once, as when a worker moves on between the two calls. */
    private static final class RacySwitch implements Controller.SwitchControl {
        final List<String> installs = new ArrayList<>();
        int earliest = 10;
        boolean refuseOnce = true;

        @Override
        public int earliestSwapRound() {
            return earliest;
        }

        @Override
        public Status write(final TableWrite write) {
            if (refuseOnce) {
                refuseOnce = false;
                earliest = 12;
                return Status.TOO_EARLY;
            }
            final SyncConfigEntry e = (SyncConfigEntry) write.entry();
            installs.add(e.config() + "@" + e.firstRound());
            return Status.OK;
        }
    }

    @Test
    void shouldMeasureTheRoundTimeFromTheSwitchsReleaseTimesPerReleasedRound() {
        assertThat(ControlLoop.roundTimeNs(4, 100 * MS, 6, 140 * MS)).isEqualTo(20 * MS);
        assertThat(ControlLoop.roundTimeNs(-1, -1, 0, 5 * MS)).isZero();
        assertThat(ControlLoop.roundTimeNs(3, 10 * MS, 4, -1)).isZero();
    }

    @Test
    void shouldEvaluateOnlyWhenRAdvancesAndRetryATooEarlyInstallOnce() throws Exception {
        final Policy policy = PolicyParser.parse("policy p\nstart bsp\nwhen round >= 3 then ssp(2)\n");
        final RacySwitch control = new RacySwitch();
        final Controller controller = new Controller(policy, 1, 2, control);
        final Deque<TelemetrySample> samples = new ArrayDeque<>();
        for (final int r : new int[] {1, 1, 2, 3, 3}) {
            samples.add(new TelemetrySample(r, r * 10 * MS, new int[] {r, r}, new long[] {MS, MS}));
        }
        final ControlLoop loop = new ControlLoop(controller, samples::poll);
        final List<Controller.Decision> decided = new ArrayList<>();
        List<Controller.Decision> fresh;
        while ((fresh = loop.poll()) != null) {
            decided.addAll(fresh);
        }
        assertThat(decided).hasSize(1);
        // the first install came too early: the earliest round was read again
        assertThat(decided.get(0).firstRound).isEqualTo(12);
        assertThat(control.installs).containsExactly("ssp:2@12");
    }

    @Test
    void autoCutsAWorkerTheSwitchHearsLateThoughItComputesAsFastAsTheOthers() throws Exception {
        // four workers computing 10 ms a round; the switch hears worker 1's packets 40 ms after the first
        // (a slow host or link): only the arrival offsets show it, the compute times do not
        for (final boolean offsets : new boolean[] {true, false}) {
            final RacySwitch control = new RacySwitch();
            final Controller controller = new Controller(PolicyParser.parse("policy auto\nauto"), 1, 4, control);
            final Deque<TelemetrySample> samples = new ArrayDeque<>();
            for (int r = 1; r <= 60; r++) {
                final long[] compute = {10 * MS, 10 * MS, 10 * MS, 10 * MS};
                final FinishedRounds finished = new FinishedRounds(new int[] {r - 1, r - 1, r - 1, r - 1}, compute.clone(),
                    new long[] {0, 40 * MS, MS, 2 * MS});
                samples.add(new TelemetrySample(r, r * 52 * MS, new int[] {r, r, r, r}, compute, offsets ? finished : FinishedRounds.NONE));
            }
            final ControlLoop loop = new ControlLoop(controller, samples::poll);
            final List<Controller.Decision> decided = new ArrayList<>();
            List<Controller.Decision> fresh;
            while ((fresh = loop.poll()) != null) {
                decided.addAll(fresh);
            }
            if (!offsets) {
                assertThat(decided).as("compute times alone: nobody is slow").isEmpty();
                continue;
            }
            assertThat(decided).as("with the offsets").isNotEmpty();
            final SyncConfig to = ((SyncConfigEntry) decided.get(0).write.entry()).config();
            assertThat(to.noneRequired() || to.timeoutNs() != SyncConfig.NO_TIMEOUT).as(decided.toString()).isTrue();
            assertThat(to.timeoutNs() == SyncConfig.NO_TIMEOUT || to.timeoutNs() > 2 * MS && to.timeoutNs() < 40 * MS)
                .as(decided.toString()).isTrue();
        }
    }
}
