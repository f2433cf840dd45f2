package io.serene.node;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Stall reports, as Horovod's stall inspector gives them: a round that has waited longer than
 * the threshold is reported once, naming the job, the round and the workers it waits for, and
 * again when it is released. One instance per watcher; feed it every {@link SwitchView}.
 */
public final class StallWatch {
    /** The default threshold, seconds: far above a round's time in any run here, far below a timeout a user would wait out. */
    public static final String DEFAULT = "5";
    public static final double DEFAULT_SECONDS = Double.parseDouble(DEFAULT);

    private final long thresholdNs;
    /** Per job: the round reported stalled, and since when it waited. */
    private final Map<Integer, long[]> reported = new HashMap<>();

    /** {@code seconds <= 0}: never reports. */
    public StallWatch(final double seconds) {
        if (!(seconds >= 0) || Double.isInfinite(seconds)) {
            throw new IllegalArgumentException("--stall-seconds must be a finite number >= 0 (0: off), was " + seconds);
        }
        this.thresholdNs = (long) (seconds * 1e9);
    }

    /** The threshold, ns; 0: off. */
    public long thresholdNs() {
        return thresholdNs;
    }

    public boolean enabled() {
        return thresholdNs > 0;
    }

    /**
     * Whether the job's next round has waited longer than the threshold for some worker (a round no
     * worker started waits for nobody: the workers compute, or are done).
     */
    public boolean stalled(final SwitchView.Job job, final long nowNs) {
        return enabled() && !job.waitingFor().isEmpty() && job.waitedNs(nowNs) >= thresholdNs;
    }

    /** The lines to log for this view: stalls that began, stalls that ended. */
    public List<String> check(final SwitchView view) {
        final List<String> lines = new ArrayList<>();
        if (!enabled()) {
            return lines;
        }
        final Map<Integer, SwitchView.Job> present = new HashMap<>();
        for (final SwitchView.Job job : view.jobs()) {
            present.put(job.job(), job);
            final int round = job.releasedRound() + 1;
            final long[] was = reported.get(job.job());
            if (was != null && was[0] != round) {
                final int at = (int) was[0] - job.firstTimedRound();
                final long releasedNs = at >= 0 && at < job.releaseNs().length ? job.releaseNs()[at] : job.waitingSinceNs();
                lines.add(String.format(Locale.ROOT, "job %d: round %d released after %.1f s", job.job(), was[0],
                    (releasedNs - was[1]) / 1e9));
                reported.remove(job.job());
            }
            if (!reported.containsKey(job.job()) && stalled(job, view.timeNs())) {
                reported.put(job.job(), new long[] {round, job.waitingSinceNs()});
                lines.add(describe(job, view.timeNs()));
            }
        }
        reported.keySet().removeIf(j -> !present.containsKey(j));
        return lines;
    }

    /** One line: the job, the round, how long it waited, the workers it waits for, the config in force. */
    public static String describe(final SwitchView.Job job, final long nowNs) {
        return String.format(Locale.ROOT, "job %d: round %d has waited %.1f s for %s (%s)", job.job(), job.releasedRound() + 1,
            job.waitedNs(nowNs) / 1e9, workers(job.waitingFor()), String.join("; ", job.configs()));
    }

    /** "worker 2" or "workers 1, 3". */
    public static String workers(final BitSet set) {
        final String list = set.toString().replaceAll("[{}]", "");
        return (set.cardinality() == 1 ? "worker " : "workers ") + list;
    }
}
