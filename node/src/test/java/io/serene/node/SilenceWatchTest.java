package io.serene.node;

import org.junit.jupiter.api.Test;

import java.util.BitSet;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Failure detection from round times, on hand-made views: who is silent, when, and when not. */
class SilenceWatchTest {
    private static final long MS = 1_000_000L;

    /** A view at {@code nowNs} of a job whose R just moved to {@code released}. */
    private static SwitchView view(final long nowNs, final int released, final int[] clocks, final int... waitingFor) {
        return view(nowNs, nowNs, released, clocks, waitingFor);
    }

    private static SwitchView view(final long nowNs, final long releasedAtNs, final int released, final int[] clocks,
                                   final int... waitingFor) {
        final BitSet waiting = new BitSet();
        for (final int w : waitingFor) {
            waiting.set(w);
        }
        return new SwitchView(nowNs, Map.of(), List.of(new SwitchView.Job(1, released, releasedAtNs, 0, clocks, new long[clocks.length],
            new int[clocks.length], List.of("bsp"), waiting, released + 1, new long[0])));
    }

    private static SilenceWatch watchWithRounds(final double rounds, final double roundSeconds) {
        final SilenceWatch w = new SilenceWatch(rounds);
        for (int i = 0; i < 10; i++) {
            w.roundReleased(1, roundSeconds);
        }
        return w;
    }

    @Test
    void aWorkerLeftBehindUnderAQuorumIsReportedAfterTheRoundTimesAndWhenItIsBack() {
        // 50 round times of 40 ms = 2 s
        final SilenceWatch w = watchWithRounds(50, 0.040);
        assertThat(w.check(view(0, 10, new int[] {10, 10, 10}))).isEmpty();
        assertThat(w.check(view(1_900 * MS, 57, new int[] {57, 57, 10}))).as("1.9 s: not yet").isEmpty();
        final List<String> lines = w.check(view(2_100 * MS, 62, new int[] {62, 62, 10}));
        assertThat(lines).containsExactly("job 1: worker 2 silent for 2.1 s, 53 round times (typical 40.0 ms), last heard at round 10 "
            + "while the job is at 62: failed or stopped?");
        assertThat(w.silent(1, 2)).isTrue();
        assertThat(w.silent(1, 0)).isFalse();
        assertThat(w.check(view(3_000 * MS, 80, new int[] {80, 80, 10}))).as("once").isEmpty();
        assertThat(w.reported()).isEqualTo(1);
        assertThat(w.check(view(3_100 * MS, 81, new int[] {81, 81, 81}))).containsExactly("job 1: worker 2 is heard from again (round 81)");
        assertThat(w.silent(1, 2)).isFalse();
        assertThat(w.check(view(3_200 * MS, -1, new int[] {-1, -1, -1}))).as("a rebuilt job's clocks start again: nothing to say")
            .isEmpty();
    }

    @Test
    void aStragglerIsSlowNotSilentUntilItMissesThatManyOfItsOwnRounds() {
        final SilenceWatch w = watchWithRounds(50, 0.040);
        final long[] compute = {30 * MS, 30 * MS, 100 * MS};
        final SwitchView start = new SwitchView(0, Map.of(), List.of(new SwitchView.Job(1, 10, 0, 0, new int[] {10, 10, 10}, compute,
            new int[3], List.of("bsp+exclude:2"), new BitSet(), 11, new long[0])));
        w.check(start);
        final SwitchView later = new SwitchView(2_100 * MS, Map.of(), List.of(new SwitchView.Job(1, 62, 2_100 * MS, 0,
            new int[] {62, 62, 10}, compute, new int[3], List.of("bsp+exclude:2"), new BitSet(), 63, new long[0])));
        assertThat(w.check(later)).as("50 of its own 100 ms rounds: 5 s").isEmpty();
    }

    @Test
    void aWorkerLeftOutButHeardOfIsAliveAndIsReportedOnceItFallsQuiet() {
        // 50 round times of 40 ms = 2 s; worker 2 excluded: its clock stays at 10, its reports (or late
        // contributions) of the rounds released without it keep coming
        final SilenceWatch w = watchWithRounds(50, 0.040);
        assertThat(w.check(heardView(0, 10, 10))).isEmpty();
        assertThat(w.check(heardView(2_100 * MS, 62, 61))).as("heard of in round 61: alive").isEmpty();
        assertThat(w.check(heardView(4_200 * MS, 114, 113))).isEmpty();
        assertThat(w.silent(1, 2)).isFalse();
        // then nothing more from it: silent after 50 round times
        final List<String> lines = w.check(heardView(6_400 * MS, 169, 113));
        assertThat(lines).hasSize(1).allMatch(l -> l.contains("worker 2 silent for 2.2 s") && l.contains("last heard at round 113"));
    }

    /** A view of a job of three where worker 2's clock stays at 10 and the switch heard of it last in round {@code heard}. */
    private static SwitchView heardView(final long nowNs, final int released, final int heard) {
        return new SwitchView(nowNs, Map.of(), List.of(new SwitchView.Job(1, released, nowNs, 0, new int[] {released, released, 10},
            new long[3], new int[3], List.of("bsp+exclude:2"), new BitSet(), released + 1, new long[0],
            new int[] {released, released, heard})));
    }

    @Test
    void underBspTheWorkerTheRoundWaitsForIsReported() {
        final SilenceWatch w = watchWithRounds(50, 0.010);
        w.check(view(0, 10, new int[] {11, 11, 10}, 2));
        assertThat(w.check(view(900 * MS, 10, new int[] {11, 11, 10}, 2))).as("at least a second").isEmpty();
        assertThat(w.check(view(1_100 * MS, 10, new int[] {11, 11, 10}, 2))).hasSize(1).allMatch(l -> l.contains("worker 2 silent"));
    }

    @Test
    void anIdleOrFinishedJobIsNotASilence() {
        final SilenceWatch w = watchWithRounds(50, 0.010);
        w.check(view(0, 99, new int[] {99, 99, 99}));
        assertThat(w.check(view(60_000 * MS, 99, new int[] {99, 99, 99}))).as("every worker done, nothing waits").isEmpty();
        // the others finished and evaluate: R has not moved for a while, a worker that skipped the last rounds is not silent
        final SilenceWatch end = watchWithRounds(50, 0.010);
        end.check(view(0, 90, new int[] {90, 90, 80}));
        assertThat(end.check(view(3_000 * MS, 1_000 * MS, 99, new int[] {99, 99, 80}))).isEmpty();
        final SilenceWatch starting = watchWithRounds(50, 0.010);
        starting.check(view(0, 5, new int[] {5, -1}));
        assertThat(starting.check(view(3_000 * MS, 300, new int[] {300, -1}))).as("never heard from: still starting").isEmpty();
        final SilenceWatch fresh = new SilenceWatch(50);
        fresh.check(view(0, -1, new int[] {0, -1}, 1));
        assertThat(fresh.check(view(60_000 * MS, -1, new int[] {0, -1}, 1))).as("no round time known yet").isEmpty();
        final SilenceWatch off = watchWithRounds(0, 0.010);
        off.check(view(0, 10, new int[] {12, 10}));
        assertThat(off.check(view(60_000 * MS, 50, new int[] {50, 10}))).as("0: off").isEmpty();
        assertThatThrownBy(() -> new SilenceWatch(-1)).hasMessageContaining("--silence-rounds");
    }
}
