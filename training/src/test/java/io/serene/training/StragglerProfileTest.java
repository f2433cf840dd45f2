package io.serene.training;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StragglerProfileTest {
    @Test
    void persistentSlowsOneWorkerEveryRound() {
        final StragglerProfile p = StragglerProfile.parse("persistent:3:x3", 1);
        for (int round = 0; round < 100; round++) {
            assertThat(p.factor(3, round)).isEqualTo(3.0);
            assertThat(p.factor(2, round)).isEqualTo(1.0);
        }
    }

    @Test
    void transientHitsAboutTheAskedShareAndIsReproducible() {
        final StragglerProfile p = StragglerProfile.parse("transient:p=0.05,x4", 11);
        final StragglerProfile again = StragglerProfile.parse("transient:p=0.05,x4", 11);
        final StragglerProfile other = StragglerProfile.parse("transient:p=0.05,x4", 12);
        int slow = 0;
        int differs = 0;
        for (int w = 0; w < 64; w++) {
            for (int round = 0; round < 400; round++) {
                final double f = p.factor(w, round);
                assertThat(f).isIn(1.0, 4.0);
                assertThat(again.factor(w, round)).isEqualTo(f);
                slow += f > 1 ? 1 : 0;
                differs += other.factor(w, round) != f ? 1 : 0;
            }
        }
        assertThat(slow / (64.0 * 400)).isBetween(0.045, 0.055);
        assertThat(differs).as("another seed, another schedule").isPositive();
    }

    @Test
    void heavyTailIsAtLeastOneWithAParetoTail() {
        final StragglerProfile p = StragglerProfile.parse("heavytail:alpha=2", 5);
        int aboveTwo = 0;
        final int n = 100_000;
        for (int i = 0; i < n; i++) {
            final double f = p.factor(i % 100, i / 100);
            assertThat(f).isGreaterThanOrEqualTo(1.0);
            aboveTwo += f > 2 ? 1 : 0;
        }
        // P(F > 2) = 2^-alpha = 0.25
        assertThat(aboveTwo / (double) n).isBetween(0.24, 0.26);
    }

    @Test
    void classesAndCombinationsMultiply() {
        final StragglerProfile p = StragglerProfile.parse("classes:0-3=x1,4-7=x2.5+persistent:5:x2", 1);
        assertThat(p.factor(0, 9)).isEqualTo(1.0);
        assertThat(p.factor(4, 9)).isEqualTo(2.5);
        assertThat(p.factor(5, 9)).isEqualTo(5.0);
        assertThat(p.factor(8, 9)).isEqualTo(1.0);
        assertThat(StragglerProfile.parse("none", 1).factor(3, 3)).isEqualTo(1.0);
    }

    @Test
    void traceReplaysAFileAndCyclesItsRounds(@TempDir final Path dir) throws Exception {
        final Path file = dir.resolve("trace.csv");
        Files.writeString(file, "# worker,round,factor\n0,0,2\n1,1,3.5\n");
        final StragglerProfile p = StragglerProfile.parse("trace:" + file, 1);
        assertThat(p.factor(0, 0)).isEqualTo(2.0);
        assertThat(p.factor(1, 1)).isEqualTo(3.5);
        assertThat(p.factor(1, 3)).isEqualTo(3.5);
        assertThat(p.factor(0, 1)).isEqualTo(1.0);
        Files.writeString(file, "0,0,0.5\n");
        assertThatThrownBy(() -> StragglerProfile.parse("trace:" + file, 1)).hasMessageContaining("line 1");
        assertThatThrownBy(() -> StragglerProfile.parse("trace:" + dir.resolve("missing"), 1))
            .hasMessageContaining("cannot read straggler trace");
    }

    @Test
    void spellsSlowAWorkerForWholeStretchesStartingAtItsOwnOffset() {
        final int length = 30;
        final StragglerProfile p = StragglerProfile.parse("transient:p=0.2,x8,rounds=30", 5);
        final StragglerProfile again = StragglerProfile.parse("transient:p=0.2,x8,rounds=30", 5);
        int slow = 0;
        final Set<Integer> offsets = new HashSet<>();
        for (int w = 0; w < 64; w++) {
            final Set<Integer> changes = new HashSet<>();
            for (int round = 0; round < 3000; round++) {
                final double f = p.factor(w, round);
                assertThat(f).isIn(1.0, 8.0);
                assertThat(again.factor(w, round)).isEqualTo(f);
                slow += f > 1 ? 1 : 0;
                if (round > 0 && f != p.factor(w, round - 1)) {
                    changes.add(round % length);
                }
            }
            assertThat(changes).as("worker %d changes speed only where one of its stretches begins", w).hasSize(1);
            offsets.addAll(changes);
        }
        assertThat(slow / (64.0 * 3000)).isBetween(0.17, 0.23);
        assertThat(offsets).as("workers' stretches begin at different rounds").hasSizeGreaterThan(10);
        final StragglerProfile oneRound = StragglerProfile.parse("transient:p=0.05,x4,rounds=1", 11);
        final StragglerProfile perRound = StragglerProfile.parse("transient:p=0.05,x4", 11);
        for (int round = 0; round < 200; round++) {
            assertThat(oneRound.factor(2, round)).as("rounds=1 is the per-round profile").isEqualTo(perRound.factor(2, round));
        }
    }

    @Test
    void movingSlowsExactlyOneWorkerAtATimeAndMovesEveryStretch() {
        final StragglerProfile p = StragglerProfile.parse("moving:x8,rounds=30", 3, 8);
        final Set<Integer> slowWorkers = new HashSet<>();
        int previous = -1;
        int moves = 0;
        for (int round = 0; round < 3000; round++) {
            int slow = -1;
            for (int w = 0; w < 8; w++) {
                final double f = p.factor(w, round);
                assertThat(f).isIn(1.0, 8.0);
                if (f > 1) {
                    assertThat(slow).as("round %d: one straggler at a time", round).isEqualTo(-1);
                    slow = w;
                }
            }
            assertThat(slow).as("round %d has a straggler", round).isNotEqualTo(-1);
            if (round % 30 != 0) {
                assertThat(slow).as("round %d: the straggler moves only where a stretch begins", round).isEqualTo(previous);
            } else if (slow != previous) {
                moves++;
            }
            slowWorkers.add(slow);
            previous = slow;
        }
        assertThat(slowWorkers).as("every worker takes a turn").hasSize(8);
        assertThat(moves).as("it moves at most stretches (a draw may repeat)").isBetween(70, 100);
        // the syntax alone parses (a run's settings are checked before its size is known); a factor needs the size
        final StragglerProfile unsized = StragglerProfile.parse("moving:x8,rounds=30", 3);
        assertThatThrownBy(() -> unsized.factor(0, 0)).hasMessageContaining("needs the job's worker count");
        assertThat(TrainSettings.builder().stragglers("moving:x8,rounds=30").build().profile(4).factor(0, 0)).isGreaterThanOrEqualTo(1.0);
        assertThatThrownBy(() -> StragglerProfile.parse("moving:x8", 3, 4)).hasMessageContaining("moving:xF,rounds=L");
    }

    @Test
    void badTextNamesThePartAndTheSyntax() {
        assertThatThrownBy(() -> StragglerProfile.parse("persistant:3:x3", 1))
            .hasMessage("unknown straggler profile part 'persistant:3:x3' (expected " + StragglerProfile.SYNTAX + ")");
        assertThatThrownBy(() -> StragglerProfile.parse("persistent:3:3", 1))
            .hasMessageContaining("'persistent:3:3': expected a slowdown written xF");
        assertThatThrownBy(() -> StragglerProfile.parse("transient:p=2,x4", 1)).hasMessageContaining("probability");
        assertThatThrownBy(() -> StragglerProfile.parse("transient:x4", 1)).hasMessageContaining("transient:p=P,xF");
        assertThatThrownBy(() -> StragglerProfile.parse("transient:p=0.2,x8,rounds=0", 1)).hasMessageContaining("whole rounds >= 1");
        assertThatThrownBy(() -> StragglerProfile.parse("transient:p=0.2,x8,for=3", 1)).hasMessageContaining("expected rounds=L");
        assertThatThrownBy(() -> StragglerProfile.parse("transient:p=0.2,x8,rounds=3,x", 1)).hasMessageContaining("rounds=L");
        assertThatThrownBy(() -> StragglerProfile.parse("heavytail:alpha=0", 1)).hasMessageContaining("alpha > 0");
        assertThatThrownBy(() -> StragglerProfile.parse("classes:4-2=x2", 1)).hasMessageContaining("A <= B");
        assertThatThrownBy(() -> StragglerProfile.parse("persistent:3:x0.5", 1)).hasMessageContaining(">= 1");
        assertThatThrownBy(() -> StragglerProfile.parse("", 1)).hasMessageContaining("empty straggler profile");
    }

    @Test
    void slowPatternPausesSerenesShareOfStepsForAStretchFromItsRange() {
        // Serene's slow pattern: with probability 0.15 a pause of U[0.5, 2.0] steps on top of the step
        final StragglerProfile p = StragglerProfile.parse("slow:p=0.15,pause=0.5-2.0", 3);
        int slow = 0;
        double pauses = 0;
        final int n = 64 * 1000;
        for (int w = 0; w < 64; w++) {
            for (int round = 0; round < 1000; round++) {
                final double f = p.factor(w, round);
                assertThat(f == 1.0 || (f >= 1.5 && f <= 3.0)).as("factor %s of worker %d round %d", f, w, round).isTrue();
                if (f > 1) {
                    slow++;
                    pauses += f - 1;
                }
                assertThat(p.pauseNs(w, round)).isZero();
            }
        }
        assertThat(slow / (double) n).isBetween(0.14, 0.16);
        assertThat(pauses / slow).as("the mean pause, in steps").isBetween(1.2, 1.3);
    }

    @Test
    void failurePausesItsWorkerOnceForItsDuration() {
        final StragglerProfile p = StragglerProfile.parse("failure:0,p=0.01,pause=240s", 9);
        final Set<Integer> firstRounds = new HashSet<>();
        for (long seed = 1; seed <= 200; seed++) {
            final StragglerProfile s = StragglerProfile.parse("failure:0,p=0.01,pause=240s", seed);
            int paused = 0;
            for (int round = 0; round < 5_000; round++) {
                final long ns = s.pauseNs(0, round);
                assertThat(ns).isIn(0L, 240_000_000_000L);
                assertThat(s.factor(0, round)).isEqualTo(1.0);
                assertThat(s.pauseNs(1, round)).as("only worker 0 fails").isZero();
                if (ns > 0) {
                    paused++;
                    firstRounds.add(round);
                }
            }
            assertThat(paused).as("seed %d: at most once", seed).isLessThanOrEqualTo(1);
        }
        // geometric with p = 0.01: a mean of about 100 steps, spread out
        assertThat(firstRounds.size()).isGreaterThan(100);
        assertThat(p.pauseNs(0, (int) StragglerProfile.firstFailure(9, 0, 0, 0.01))).isEqualTo(240_000_000_000L);
        assertThat(StragglerProfile.firstFailure(9, 0, 0, 1.0)).isZero();
        assertThat(StragglerProfile.firstFailure(9, 0, 0, 0.0)).as("never").isNegative();
    }

    @Test
    void serenesPatternsRefuseBadRangesAndProbabilities() {
        assertThatThrownBy(() -> StragglerProfile.parse("slow:p=1.5,pause=0.5-2.0", 1)).hasMessageContaining("probability p in [0, 1]");
        assertThatThrownBy(() -> StragglerProfile.parse("slow:p=0.15,pause=2.0-0.5", 1)).hasMessageContaining("0 <= A <= B");
        assertThatThrownBy(() -> StragglerProfile.parse("slow:p=0.15,pause=2.0", 1)).hasMessageContaining("range of steps A-B");
        assertThatThrownBy(() -> StragglerProfile.parse("slow:p=0.15", 1)).hasMessageContaining("slow:p=P,pause=A-B");
        assertThatThrownBy(() -> StragglerProfile.parse("failure:0,p=-0.1,pause=240s", 1)).hasMessageContaining("probability");
        assertThatThrownBy(() -> StragglerProfile.parse("failure:0,p=0.01,pause=240", 1)).hasMessageContaining("a pause with a unit");
        assertThatThrownBy(() -> StragglerProfile.parse("failure:x,p=0.01,pause=2s", 1)).hasMessageContaining("a worker id");
        assertThatThrownBy(() -> StragglerProfile.parse("transient:p=2,x4", 1)).hasMessageContaining("probability p in [0, 1]");
    }

    @Test
    void aCommunicationStragglerSlowsOneWorkersLinkForItsRounds() {
        final StragglerProfile p = StragglerProfile.parse("link:2:x10,rounds=50-80", 1);
        assertThat(p.slowsLinks()).isTrue();
        assertThat(StragglerProfile.parse("slow:p=0.15,pause=0.5-2.0", 1).slowsLinks()).isFalse();
        for (int round = 0; round < 200; round++) {
            assertThat(p.factor(2, round)).as("its compute is not slowed").isEqualTo(1.0);
            assertThat(p.linkFactor(2, round)).isEqualTo(round >= 50 && round <= 80 ? 10.0 : 1.0);
            assertThat(p.linkFactor(1, round)).isEqualTo(1.0);
        }
        assertThatThrownBy(() -> StragglerProfile.parse("link:2:x10,rounds=80-50", 1)).hasMessageContaining("A <= B");
        assertThatThrownBy(() -> StragglerProfile.parse("link:2:x0.5,rounds=1-5", 1)).hasMessageContaining("factor >= 1");
        assertThatThrownBy(() -> StragglerProfile.parse("link:2,rounds=1-5", 1)).hasMessageContaining("link:W:xF,rounds=A-B");
    }

    @Test
    void seedsDrawIndependentSchedulesNotShiftedCopies() {
        // once seed s at round r + 1 drew exactly what seed s + 1 drew at round r
        int shifted = 0;
        int slowedBoth = 0;
        int slowed1 = 0;
        int slowed2 = 0;
        for (int w = 0; w < 8; w++) {
            for (int r = 0; r < 2_000; r++) {
                shifted += StragglerProfile.uniform(1, 0, w, r + 1) == StragglerProfile.uniform(2, 0, w, r) ? 1 : 0;
                final boolean a = StragglerProfile.uniform(1, 0, w, r) < 0.15;
                final boolean b = StragglerProfile.uniform(2, 0, w, r) < 0.15;
                slowed1 += a ? 1 : 0;
                slowed2 += b ? 1 : 0;
                slowedBoth += a && b ? 1 : 0;
            }
        }
        assertThat(shifted).isZero();
        assertThat(slowed1).as("about 0.15 of 16,000").isBetween(2_200, 2_600);
        assertThat(slowed2).isBetween(2_200, 2_600);
        assertThat(slowedBoth).as("independent: about 0.15 x 0.15 of 16,000").isBetween(270, 450);
    }
}
