package io.serene.node;

import io.serene.dataplane.SwitchPipeline;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * Reads a {@link SwitchView} through the switch's command queue every interval, on its own daemon
 * thread: logs stall reports ({@link StallWatch}), hands each round's time (between R passing it and
 * the round before) to listeners, and keeps the latest view for scrapes, which so never wait for
 * the switch's thread. Rounds whose release times left the ring between two reads are counted as
 * unseen, not guessed.
 */
public final class SwitchMonitor implements AutoCloseable {
    /** A round's release, as the monitor saw it. */
    public interface RoundListener {
        void released(int job, int round, double seconds);
    }

    private final SwitchPipeline pipeline;
    private final long intervalMs;
    private final StallWatch stalls;
    private final SilenceWatch silence;
    private final Consumer<String> log;
    private final List<RoundListener> listeners = new CopyOnWriteArrayList<>();
    private final List<Consumer<SwitchView>> viewListeners = new CopyOnWriteArrayList<>();
    private final Map<Integer, Integer> nextRound = new HashMap<>();
    private final Map<Integer, long[]> lastRelease = new HashMap<>();
    private final Map<Integer, Long> unseen = new ConcurrentHashMap<>();
    private final Thread thread;
    private volatile SwitchView latest;
    private volatile boolean closed;

    public SwitchMonitor(final SwitchPipeline pipeline, final long intervalMs, final StallWatch stalls, final Consumer<String> log) {
        this(pipeline, intervalMs, stalls, new SilenceWatch(0), log);
    }

    /** With failure detection: {@code silence} reports workers gone quiet, from the round times this monitor sees. */
    public SwitchMonitor(final SwitchPipeline pipeline, final long intervalMs, final StallWatch stalls, final SilenceWatch silence,
                         final Consumer<String> log) {
        if (intervalMs <= 0) {
            throw new IllegalArgumentException("monitor interval must be positive, was " + intervalMs);
        }
        this.pipeline = pipeline;
        this.intervalMs = intervalMs;
        this.stalls = stalls;
        this.silence = silence;
        this.log = log;
        listeners.add((job, round, seconds) -> silence.roundReleased(job, seconds));
        this.thread = new Thread(this::run, "switch-monitor");
        thread.setDaemon(true);
    }

    public SwitchMonitor start() {
        thread.start();
        return this;
    }

    public void addListener(final RoundListener listener) {
        listeners.add(listener);
    }

    /** Called with every view read, after the stall check. */
    public void addViewListener(final Consumer<SwitchView> listener) {
        viewListeners.add(listener);
    }

    /** The latest view, or null before the first read. */
    public SwitchView latest() {
        return latest;
    }

    /** Rounds of a job whose release time the monitor could not see (they left the ring between reads). */
    public long unseenRounds(final int job) {
        return unseen.getOrDefault(job, 0L);
    }

    public StallWatch stalls() {
        return stalls;
    }

    public SilenceWatch silence() {
        return silence;
    }

    /** Reads once now (also what the thread does every interval). */
    public synchronized SwitchView poll() throws Exception {
        final SwitchView view = SwitchView.request(pipeline, nextRound);
        for (final SwitchView.Job job : view.jobs()) {
            final int expected = nextRound.getOrDefault(job.job(), 0);
            if (job.firstTimedRound() > expected && job.releasedRound() >= expected) {
                unseen.merge(job.job(), (long) (job.firstTimedRound() - expected), Long::sum);
                lastRelease.remove(job.job());
            }
            final long[] last = lastRelease.get(job.job());
            long previousNs = last != null && last[0] == job.firstTimedRound() - 1 ? last[1] : -1;
            for (int i = 0; i < job.releaseNs().length; i++) {
                final int round = job.firstTimedRound() + i;
                if (previousNs >= 0) {
                    final double seconds = (job.releaseNs()[i] - previousNs) / 1e9;
                    for (final RoundListener l : listeners) {
                        l.released(job.job(), round, seconds);
                    }
                }
                previousNs = job.releaseNs()[i];
            }
            if (job.releaseNs().length > 0) {
                lastRelease.put(job.job(), new long[] {job.releasedRound(), previousNs});
            }
            nextRound.put(job.job(), Math.max(expected, job.releasedRound() + 1));
        }
        nextRound.keySet().removeIf(id -> view.jobs().stream().noneMatch(j -> j.job() == id));
        for (final String line : stalls.check(view)) {
            log.accept(line);
        }
        for (final String line : silence.check(view)) {
            log.accept(line);
        }
        latest = view;
        for (final Consumer<SwitchView> l : viewListeners) {
            l.accept(view);
        }
        return view;
    }

    private void run() {
        while (!closed) {
            try {
                poll();
                Thread.sleep(intervalMs);
            } catch (final InterruptedException ex) {
                return;
            } catch (final Exception | Error ex) {
                // a listener's Error too: the monitor (stall and silence reports, metrics) goes on
                if (!closed) {
                    log.accept("switch monitor: " + ex);
                }
                try {
                    Thread.sleep(intervalMs);
                } catch (final InterruptedException stop) {
                    return;
                }
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        thread.interrupt();
    }
}
