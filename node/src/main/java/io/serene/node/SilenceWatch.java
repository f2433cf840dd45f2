package io.serene.node;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Failure detection from the round times: a worker the switch has heard of in no newer round (its
 * clock, or a round it came late to or reported while left out: {@link SwitchView.Job#heard}) for {@code rounds}
 * typical round times of its job (the median of the last ones released), or of its own compute
 * time if that is longer (a straggler is slow, not silent), and at least a second, while
 * the job needs it (its next round waits for it) or goes on without it (another worker is ahead
 * and R moved within the last ten round times, or half a second) is reported silent, once, naming
 * it; and again when it is heard from. Under a quorum, a timeout or
 * an exclusion a dead worker holds no round back, so only this notices it.
 */
public final class SilenceWatch {
    /** The default: fifty round times, far beyond a straggler's spell, soon enough to matter. */
    public static final String DEFAULT = "50";
    public static final double DEFAULT_ROUNDS = Double.parseDouble(DEFAULT);
    private static final long MIN_SILENCE_NS = 1_000_000_000L;
    private static final int WINDOW = 32;
    /** R moved within this many typical round times: the job is going on. */
    private static final int RECENT_ROUNDS = 10;
    /** ... and at least this long (rounds released in bursts make the median tiny; the monitor reads every 100 ms). */
    private static final long MIN_RECENT_NS = 500_000_000L;

    private final double rounds;
    private final Map<Integer, ArrayDeque<Double>> roundSeconds = new HashMap<>();
    /** Per job and worker: its last clock, since when, and whether it is reported silent. */
    private final Map<Integer, long[][]> workers = new HashMap<>();
    /** Workers reported silent so far (each report once). */
    private long reported;

    /** {@code rounds <= 0}: never reports. */
    public SilenceWatch(final double rounds) {
        if (!(rounds >= 0) || Double.isInfinite(rounds)) {
            throw new IllegalArgumentException("--silence-rounds must be a finite number >= 0 (0: off), was " + rounds);
        }
        this.rounds = rounds;
    }

    /** A round of a job released after {@code seconds} (the monitor's round listener). */
    public synchronized void roundReleased(final int job, final double seconds) {
        final ArrayDeque<Double> q = roundSeconds.computeIfAbsent(job, k -> new ArrayDeque<>());
        q.addLast(seconds);
        if (q.size() > WINDOW) {
            q.removeFirst();
        }
    }

    /** The job's typical round time (median of the last ones), ns; 0 before any. */
    synchronized long typicalRoundNs(final int job) {
        final ArrayDeque<Double> q = roundSeconds.get(job);
        if (q == null || q.isEmpty()) {
            return 0;
        }
        final double[] s = q.stream().mapToDouble(Double::doubleValue).toArray();
        Arrays.sort(s);
        return (long) (s[s.length / 2] * 1e9);
    }

    /** How many times a worker was reported silent, since the start. */
    public synchronized long reported() {
        return reported;
    }

    /** Whether worker w of the job is reported silent now. */
    public synchronized boolean silent(final int job, final int w) {
        final long[][] state = workers.get(job);
        return state != null && w < state.length && state[w][2] != 0;
    }

    /** The lines to log for this view: workers gone silent, workers heard from again. */
    public synchronized List<String> check(final SwitchView view) {
        final List<String> lines = new ArrayList<>();
        if (rounds <= 0) {
            return lines;
        }
        for (final SwitchView.Job job : view.jobs()) {
            final int n = job.clocks().length;
            final long[][] state = workers.compute(job.job(), (k, v) -> v == null || v.length != n ? fresh(n, view.timeNs()) : v);
            final long typical = typicalRoundNs(job.job());
            final int fastest = job.fastestClock();
            for (int w = 0; w < n; w++) {
                final long[] s = state[w];
                // a straggler's own pace counts: it is slow, not silent, until it misses that many of its own rounds
                final long limit = Math.max(MIN_SILENCE_NS, (long) (rounds * Math.max(typical, job.iterationNs()[w])));
                // heard of: its clock, or a round it came late to or reported (left out, but alive)
                final int heard = job.heard(w);
                if (heard != s[0]) {
                    // a clock that went back is a new incarnation of the job (rebuilt from checkpoints): nothing to report
                    if (s[2] != 0 && heard > s[0]) {
                        lines.add(String.format(Locale.ROOT, "job %d: worker %d is heard from again (round %d)", job.job(), w, heard));
                    }
                    s[0] = heard;
                    s[1] = view.timeNs();
                    s[2] = 0;
                    continue;
                }
                // needed: the next round waits for it, or the job goes on without it (another worker ahead and R moving
                // within the last few round times; not once every worker is through and evaluating)
                final boolean goingOn = fastest > heard
                    && view.timeNs() - job.waitingSinceNs() < Math.max(MIN_RECENT_NS, RECENT_ROUNDS * typical);
                // a worker not yet heard from at all is starting (its JVM warming up), not failing
                final boolean needed = heard >= 0 && (job.waitingFor().get(w) || goingOn);
                final long quiet = view.timeNs() - s[1];
                if (s[2] == 0 && typical > 0 && needed && quiet >= limit) {
                    s[2] = 1;
                    reported++;
                    lines.add(String.format(Locale.ROOT, "job %d: worker %d silent for %.1f s, %.0f round times (typical %.1f ms), "
                            + "last heard at round %d while the job is at %d: failed or stopped?", job.job(), w, quiet / 1e9,
                        quiet / (double) typical, typical / 1e6, heard, job.releasedRound()));
                }
            }
        }
        workers.keySet().removeIf(j -> view.jobs().stream().noneMatch(x -> x.job() == j));
        return lines;
    }

    private static long[][] fresh(final int n, final long nowNs) {
        final long[][] s = new long[n][3];
        for (final long[] w : s) {
            w[0] = Long.MIN_VALUE;
            w[1] = nowNs;
        }
        return s;
    }
}
