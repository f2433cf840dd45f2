package io.serene.launch;

import io.serene.controlplane.ControlLoop;
import io.serene.controlplane.Controller;
import io.serene.controlplane.Policy;
import io.serene.controlplane.TelemetrySample;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.node.LocalSwitchControl;
import io.serene.node.SilenceWatch;
import io.serene.node.SwitchView;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncSchedule;

import java.util.BitSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.IntConsumer;
import java.util.function.Supplier;

/**
 * Watches the job every 20 ms (a thread calling the switch through its command queue, or in virtual
 * time a task on the switch's own thread: {@link #direct}): installs the rest of a schedule once the
 * job exists, and feeds the policy's controller each advance of R; again for each new incarnation
 * of the job (rebuilt from its workers' checkpoints, reported to {@code onRebuilt}). A job resumed
 * or rebuilt from a checkpoint starts at the run's round {@code base} (its round 0 on the switch):
 * the schedule and the controller see the run's rounds, translated here, at the one place the two meet.
 */
final class JobMonitor extends Thread {
    private final int job;
    private final int workers;
    private final Policy policy;
    private final SwitchPipeline pipeline;
    private final SyncSchedule schedule;
    private final List<Controller.Decision> decisions;
    private final Progress progress;
    /** The run's round the job's round 0 is: the launch's, then the round a rebuild agreed on. */
    private volatile int base;
    private final SilenceWatch silence;
    private final IntConsumer onRebuilt;
    /** The policy's controller, kept across the job's incarnations. */
    private Controller controller;
    volatile Exception failure;
    /** How much the workers grow their batches while rounds count fewer contributions, at most (1: they do not); set before start. */
    double maxBatchGrowth = 1;

    JobMonitor(final SwitchPipeline pipeline, final int job, final int workers, final Policy policy, final SyncSchedule schedule,
               final List<Controller.Decision> decisions, final Progress progress, final int base, final SilenceWatch silence,
               final IntConsumer onRebuilt) {
        super("job-monitor");
        setDaemon(true);
        this.job = job;
        this.workers = workers;
        this.policy = policy;
        this.pipeline = pipeline;
        this.schedule = schedule;
        this.decisions = decisions;
        this.progress = progress;
        this.base = base;
        this.silence = silence;
        this.onRebuilt = onRebuilt;
    }

    /** How often the monitor looks at the job. */
    static final long TICK_NS = 20_000_000L;

    /** The job's incarnation served (the switch's count of jobs created when it was seen), -1 before any. */
    private long incarnation = -1;
    /** The policy's loop over the incarnation served, or null (no policy, or no job yet). */
    private ControlLoop loop;
    /** Calls on the switch run directly (in virtual time, on the thread that runs the switch) instead of through its command queue. */
    private boolean direct;

    /** Looks at the job every {@link #TICK_NS} until interrupted; a failure is kept in {@link #failure}. */
    @Override
    public void run() {
        try {
            while (!isInterrupted()) {
                tick();
                Thread.sleep(TICK_NS / 1_000_000);
            }
        } catch (final InterruptedException ex) {
            // the run ended
        } catch (final Exception ex) {
            // a call to the switch cut short by the end of the run (onSwitch keeps the interrupt) is no failure
            if (!isInterrupted()) {
                failure = ex;
            }
        }
    }

    /** Runs the monitor on the switch's own thread, one {@link #tick} at a time, calling the switch directly (virtual time). */
    JobMonitor direct() {
        direct = true;
        return this;
    }

    /**
     * One look at the job: once it exists (again: a new incarnation, rebuilt from its workers'
     * checkpoints), installs the rest of the schedule or starts the policy's controller (after a
     * rebuild it installs again what it had decided); then feeds the controller the job's advance.
     */
    void tick() throws Exception {
        // read together, on the switch's thread: a job rebuilt between two reads would be taken for one with the old one's first round
        final long[] seen = call(() -> new long[] {pipeline.firstRound(job), pipeline.counters().get(SwitchCounter.JOBS_CREATED)});
        final int first = (int) seen[0];
        if (first < 0) {
            return;
        }
        final long created = seen[1];
        if (created != incarnation) {
            if (incarnation >= 0) {
                // rebuilt from checkpoints: the job's round 0 is the round its workers agreed on (the run's rounds)
                base = first;
                onRebuilt.accept(first);
            }
            incarnation = created;
            serve();
        }
        if (loop == null) {
            return;
        }
        final List<Controller.Decision> fresh = loop.poll();
        if (fresh == null) {
            return;
        }
        for (final Controller.Decision d : fresh) {
            decisions.add(d);
            progress.println("policy " + policy.name() + ": " + d);
        }
    }

    /** Starts serving an incarnation of the job: the rest of the schedule, or the policy's controller. */
    private void serve() {
        if (schedule != null) {
            for (final SyncSchedule.Entry e : schedule.from(base).entries()) {
                if (e.firstRound > 0) {
                    final Status status = call(() -> pipeline.installConfig(job, e.firstRound, e.config));
                    if (status != Status.OK) {
                        throw new IllegalStateException("could not install " + e + " on the switch: " + status);
                    }
                }
            }
        }
        if (policy == null) {
            return;
        }
        if (controller == null) {
            controller = new Controller(policy, job, workers, new LocalSwitchControl(pipeline, job, () -> base, this::call, null));
            controller.rebalancedBatches(maxBatchGrowth);
        } else {
            controller.jobRebuilt();
        }
        loop = new ControlLoop(controller, () -> call(() -> telemetry(job)));
    }

    private TelemetrySample telemetry(final int job) {
        final int n = pipeline.workers(job);
        if (n < 0) {
            return null;
        }
        final int released = pipeline.releasedRound(job);
        final int[] clocks = new int[n];
        final long[] iterationNs = new long[n];
        for (int w = 0; w < n; w++) {
            clocks[w] = pipeline.clock(job, w);
            iterationNs[w] = pipeline.iterationNs(job, w);
        }
        for (int w = 0; w < n; w++) {
            clocks[w] += base;
        }
        final BitSet failed = new BitSet();
        for (int w = 0; w < n; w++) {
            failed.set(w, silence.silent(job, w));
        }
        return new TelemetrySample(base + released, pipeline.releasedAtNs(job, released), clocks, iterationNs,
            SwitchView.finished(pipeline, job)).withFailed(failed);
    }

    /** A write naming the run's rounds, as the switch's job (round 0 = the run's {@code base}) takes it. */

    private <T> T call(final Supplier<T> f) {
        return direct ? f.get() : onSwitch(pipeline, p -> f.get());
    }

    /** Runs f on the switch thread, through its command queue (the control service set its wake-up). */
    static <T> T onSwitch(final SwitchPipeline pipeline, final Function<SwitchPipeline, T> f) {
        try {
            return pipeline.commands().submit(f).get(10, TimeUnit.SECONDS);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted");
        } catch (final Exception ex) {
            throw new IllegalStateException("switch thread: " + ex, ex);
        }
    }
}
