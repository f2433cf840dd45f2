package io.serene.controlplane;

import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableWrite;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.BiFunction;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The auto policy's choices on synthetic telemetry: compute times drawn per worker and round, the
 * round time each round as the installed config would make it (2 ms of overhead a round).
 */
class AutoPolicyTest {
    private static final long MS = 1_000_000L;
    private static final long OVERHEAD = 2 * MS;

    /** Runs {@code rounds} rounds of a job of {@code workers}; {@code ms(worker, round)} draws compute times. */
    private static Controller run(final int workers, final int rounds, final long seed, final BiFunction<Integer, Integer, Double> ms) {
        final SyncConfig[] installed = {SyncConfig.bsp()};
        final int[] released = {0};
        final Controller c = new Controller(PolicyParser.parse("policy auto\nauto"), 1, workers, new Controller.SwitchControl() {
            @Override
            public int earliestSwapRound() {
                return released[0] + 1;
            }

            @Override
            public Status write(final TableWrite write) {
                installed[0] = ((SyncConfigEntry) write.entry()).config();
                return Status.OK;
            }
        });
        final List<long[]> past = new ArrayList<>();
        for (int r = 0; r < rounds; r++) {
            final long[] times = new long[workers];
            for (int w = 0; w < workers; w++) {
                times[w] = (long) (ms.apply(w, r) * MS);
            }
            past.add(times);
            final List<long[]> recent = past.subList(Math.max(0, past.size() - AutoChooser.WINDOW), past.size());
            final Controller.Telemetry t = new Controller.Telemetry();
            t.releasedRound = r;
            t.clocks = new int[workers];
            Arrays.fill(t.clocks, r);
            t.iterationNs = times;
            t.roundTimeNs = (long) GoodputModel.replay(installed[0], recent.toArray(new long[0][]), OVERHEAD, workers, seed).roundNs();
            released[0] = r;
            c.onRound(t);
        }
        return c;
    }

    /** At most two changes, and never back to a config it left: no flapping. */
    private static void assertNoFlapping(final Controller c, final String what) {
        final List<String> seen = new ArrayList<>(List.of("bsp"));
        for (final Controller.Decision d : c.decisions()) {
            assertThat(seen).as(what + ": back to " + d.to + " in " + c.decisions()).doesNotContain(d.to);
            seen.add(d.to);
        }
        assertThat(c.decisions().size()).as(what + ": " + c.decisions()).isLessThanOrEqualTo(2);
    }

    private static SyncConfig last(final Controller c) {
        final List<Controller.Decision> d = c.decisions();
        return d.isEmpty() ? SyncConfig.bsp() : ((SyncConfigEntry) d.get(d.size() - 1).write.entry()).config();
    }

    @Test
    void aPersistentStragglerIsExcluded() {
        for (long seed = 1; seed <= 3; seed++) {
            final Random rnd = new Random(seed);
            final Controller c = run(4, 80, seed, (w, r) -> (w == 3 ? 80 : 10) * (0.9 + 0.2 * rnd.nextDouble()));
            final SyncConfig chosen = last(c);
            assertThat(chosen.excluded().get(3)).as("seed " + seed + ": " + c.decisions()).isTrue();
            assertThat(chosen.excluded().cardinality()).as("seed " + seed).isEqualTo(1);
            assertThat(c.decisions()).as("seed " + seed).hasSize(1);
            final Controller.Decision d = c.decisions().get(0);
            assertThat(d.predicted.roundNs()).isLessThan(15.0 * MS);
            assertThat(d.runnerUp).isNotNull();
            assertThat(d.measuredRoundNs).as("measured over the rounds after it").isBetween(10.0 * MS, 15.0 * MS);
        }
    }

    @Test
    void symmetricJitterGetsABarrierThatWaitsForNobodyInParticular() {
        for (long seed = 1; seed <= 3; seed++) {
            final Random rnd = new Random(seed);
            final Controller c = run(4, 160, seed, (w, r) -> 10 * (0.9 + 0.2 * rnd.nextDouble()) * (rnd.nextDouble() < 0.2 ? 5 : 1));
            final SyncConfig chosen = last(c);
            // a bound, a timeout, a quorum or a sample: whoever is slow this round is not waited for
            assertThat(chosen.bound() > 0 || chosen.timeoutNs() != SyncConfig.NO_TIMEOUT || chosen.sample() > 0 || chosen.noneRequired())
                .as("seed " + seed + ": " + c.decisions()).isTrue();
            assertThat(chosen.excluded().isEmpty()).as("seed " + seed).isTrue();
            assertNoFlapping(c, "seed " + seed);
        }
    }

    @Test
    void noStragglerStaysBsp() {
        for (long seed = 1; seed <= 3; seed++) {
            final Random rnd = new Random(seed);
            final Controller c = run(8, 200, seed, (w, r) -> 10 * (0.9 + 0.2 * rnd.nextDouble()));
            assertThat(c.decisions()).as("seed " + seed).isEmpty();
        }
    }

    @Test
    void stationaryNoiseDoesNotFlap() {
        // a persistent straggler among noisy workers: one decision, never undone over 300 rounds
        for (long seed = 1; seed <= 3; seed++) {
            final Random rnd = new Random(seed);
            final Controller c = run(8, 300, seed, (w, r) -> (w == 5 ? 40 : 10) * (0.7 + 0.6 * rnd.nextDouble()));
            assertNoFlapping(c, "seed " + seed);
            assertThat(last(c).excluded().get(5)).as("seed " + seed).isTrue();
        }
    }

    @Test
    void noCandidateCutsCloserThanTheOverhead() {
        // eight workers finishing 1 ms apart (10..17 ms), every round
        final long[][] window = new long[16][8];
        for (final long[] round : window) {
            for (int w = 0; w < 8; w++) {
                round[w] = (10 + w) * MS;
            }
        }
        final long[][] fit = Arrays.copyOf(window, 8);
        for (final long overhead : new long[] {20 * MS, MS / 2}) {
            final AutoChooser chooser = new AutoChooser(8, 75, 1);
            // calibrates the overhead: the measured round time beyond the slowest compute
            chooser.evaluate(window, SyncConfig.bsp(), 17 * MS + overhead);
            final List<SyncConfig> candidates = chooser.candidates(fit);
            final boolean fastestK = candidates.stream().anyMatch(c -> c.quorum() > 0 && c.quorum() < 8);
            final long shortestTimeout = candidates.stream().mapToLong(SyncConfig::timeoutNs)
                .filter(t -> t != SyncConfig.NO_TIMEOUT).min().orElseThrow();
            if (overhead > MS) {
                // 1 ms apart within 20 ms of overhead: who is last is who sent last
                assertThat(fastestK).as(candidates.toString()).isFalse();
                assertThat(shortestTimeout).as(candidates.toString()).isGreaterThanOrEqualTo(overhead);
            } else {
                assertThat(fastestK).as(candidates.toString()).isTrue();
                assertThat(shortestTimeout).as(candidates.toString()).isLessThan(5 * MS);
            }
        }
    }

    @Test
    void aStragglerThatRecoversIsTakenBack() {
        final Random rnd = new Random(7);
        final Controller c = run(4, 160, 7, (w, r) -> (w == 2 && r < 60 ? 60 : 10) * (0.9 + 0.2 * rnd.nextDouble()));
        assertThat(c.decisions().get(0).to).contains("exclude:2");
        assertThat(last(c)).as(c.decisions().toString()).isEqualTo(SyncConfig.bsp());
    }
}
