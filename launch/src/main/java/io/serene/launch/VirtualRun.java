package io.serene.launch;

import io.serene.controlplane.Controller;
import io.serene.dataplane.SwitchPipeline;
import io.serene.node.SilenceWatch;
import io.serene.protocol.JobKeys;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.DjlModel;
import io.serene.training.LoopOptions;
import io.serene.training.ModelCopies;
import io.serene.training.RoundRecords;
import io.serene.training.TrainSettings;
import io.serene.training.TrainingLoop;
import io.serene.training.WorkerResult;
import io.serene.training.data.Batches;
import io.serene.training.data.FashionMnist;
import io.serene.training.data.GlobalBatch;
import io.serene.transport.FaultInjector;
import io.serene.transport.InProcessNetwork;
import io.serene.worker.VirtualClock;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerHost;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * A training run in virtual time ({@code serene train --clock virtual}): every worker's training
 * loop (the same {@link TrainingLoop} a worker process runs) in this process, each with a model of
 * its own, the switch pipeline and the workers' engines on an {@link InProcessNetwork}, one thread
 * at a time ({@link VirtualClock}). A step takes the modelled device's time, stragglers pause it,
 * a modelled link carries the packets at its rate; nothing else takes time (the host's own
 * overhead does not show), and the same inputs give the same run.
 */
final class VirtualRun {
    /** The network's one-way latency besides a modelled link: a switch hop's. */
    static final long HOP_NS = 2_000;
    /** How often a long run says how far it got, in the host's time. */
    private static final long PROGRESS_NS = 5_000_000_000L;
    private static final long TICK_NS = 100_000_000L;

    /** What a run in virtual time ended with: the workers' results and the switch's counters. */
    record Outcome(List<WorkerResult> results, Map<String, Long> counters) {
    }

    private final RunSettings s;
    private final TrainSettings t;
    private final int rounds;
    private final IntFunction<Path> records;
    private final Path evaluationShare;
    private final Path workerLog;
    private final PrintStream say;

    /**
     * A run of {@code rounds} rounds: worker w's records go to {@code records(w)}, deferred evaluations
     * are shared through {@code evaluationShare}, the workers' lines go to {@code workerLog}, and
     * progress to {@code say}.
     */
    VirtualRun(final RunSettings s, final int rounds, final IntFunction<Path> records, final Path evaluationShare, final Path workerLog,
               final PrintStream say) {
        this.s = s;
        this.t = s.training();
        this.rounds = rounds;
        this.records = records;
        this.evaluationShare = evaluationShare;
        this.workerLog = workerLog;
        this.say = say;
    }

    /** What virtual time runs today; an error names what it does not. */
    static void check(final RunSettings s) {
        final String no = "--clock virtual: ";
        if (!s.training().device().modelled()) {
            throw new IllegalArgumentException(no + "needs a modelled device (--step-time, e.g. 40ms): in virtual time a step takes "
                + "the device's time, never the host's");
        }
        if (!s.faults().faults().isEmpty() || s.checkpointEvery() > 0 || s.resume() || s.maxRestarts() > 0) {
            throw new IllegalArgumentException(no + "no faults, checkpoints or restarts (they need worker processes)");
        }
        if (s.controlPort() >= 0 || s.metricsPort() >= 0) {
            throw new IllegalArgumentException(no + "no control or metrics port (they serve on the host's clock)");
        }
    }

    /**
     * Runs the job under {@code schedule} (null: the run's policy), starting with {@code initial}; a
     * policy's decisions (its controller watching the job every 20 ms of virtual time, as on the
     * host's clock) are added to {@code decisions} and told to {@code progress}.
     */
    Outcome run(final SyncSchedule schedule, final SyncConfig initial, final List<Controller.Decision> decisions, final Progress progress)
        throws Exception {
        final long host0 = System.nanoTime();
        final InProcessNetwork network = new InProcessNetwork(FaultInjector.none(), HOP_NS, 0, 0);
        final VirtualClock clock = new VirtualClock(network);
        final String secret = JobKeys.newSecret();
        final List<Throwable> switchErrors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(TrainRun.switchContext(s, initial, secret), switchErrors::add);
        final int switchAddress = network.attach(pipeline);
        if (s.policy() != null || schedule.entries().size() > 1) {
            // the job monitor of a wall-clock run, on the switch's own thread: every 20 ms of virtual time
            final JobMonitor monitor = new JobMonitor(pipeline, s.job(), s.workers(), s.policy(), schedule, decisions, progress, 0,
                new SilenceWatch(0), first -> {
                    throw new IllegalStateException("a job rebuilt in virtual time");
                }).direct();
            monitor.maxBatchGrowth = t.rebalance() ? GlobalBatch.MAX_GROWTH : 1;
            final Runnable tick = new Runnable() {
                @Override
                public void run() {
                    try {
                        monitor.tick();
                    } catch (final RuntimeException ex) {
                        throw ex;
                    } catch (final Exception ex) {
                        throw new IllegalStateException("the policy's controller: " + ex.getMessage(), ex);
                    }
                    network.wake(switchAddress);
                    network.schedule(network.nowNs() + JobMonitor.TICK_NS, this);
                }
            };
            network.schedule(0, tick);
        }
        final JobKeys.Credential keys = JobKeys.credential(secret, "the run's secret");
        final FashionMnist dataset = FashionMnist.load(t.data());
        final float[] testPixels = dataset.test.allImages();
        final int[] testLabels = dataset.test.allLabels();
        final List<AutoCloseable> open = new ArrayList<>();
        try {
            final List<Callable<WorkerResult>> loops = new ArrayList<>();
            for (int w = 0; w < s.workers(); w++) {
                loops.add(worker(w, network, clock, switchAddress, keys, dataset, testPixels, testLabels, open));
            }
            say.printf(Locale.ROOT, "train in virtual time: %d workers, %s, policy %s, stragglers %s, %d rounds of batch %d, seed %d, "
                + "modelled step %s%s; switch and workers in this process%n", s.workers(), t.model(), s.policyName(), t.stragglers(),
                rounds, t.batch(), t.seed(), t.device(), t.link().modelled() ? ", modelled link " + t.link() : ", no link modelled "
                    + "(communication takes only the " + HOP_NS / 1000 + " us hop)");
            say.flush();
            progress(network, pipeline, host0);
            // the workers' own lines (rounds evaluated, results) go to their log, as a worker process's do
            final PrintStream console = System.out;
            final List<WorkerResult> results;
            try (PrintStream log = new PrintStream(Files.newOutputStream(workerLog), true, StandardCharsets.UTF_8)) {
                System.setOut(log);
                results = clock.run(loops, "virtual-worker");
            } finally {
                System.setOut(console);
            }
            if (!switchErrors.isEmpty()) {
                throw new IllegalStateException("the switch reported " + switchErrors.size() + " errors, first: " + switchErrors.get(0));
            }
            final Map<String, Long> counters = new LinkedHashMap<>();
            pipeline.counters().snapshot().forEach((k, v) -> counters.put(k.name().toLowerCase(Locale.ROOT), v));
            say.printf(Locale.ROOT, "%d workers trained %.2f s of virtual time in %.1f s of the host's%n", s.workers(),
                network.nowNs() / 1e9, (System.nanoTime() - host0) / 1e9);
            return new Outcome(results, counters);
        } finally {
            for (final AutoCloseable c : open) {
                c.close();
            }
        }
    }

    /** Says how far the job got every {@link #PROGRESS_NS} of the host's time (checked every 100 ms of virtual time). */
    private void progress(final InProcessNetwork network, final SwitchPipeline pipeline, final long host0) {
        final long[] last = {host0};
        final Runnable tick = new Runnable() {
            @Override
            public void run() {
                final long now = System.nanoTime();
                if (now - last[0] >= PROGRESS_NS) {
                    last[0] = now;
                    say.printf(Locale.ROOT, "round %d of %d released: %.1f s of virtual time in %.0f s of the host's%n",
                        pipeline.releasedRound(s.job()) + 1, rounds, network.nowNs() / 1e9, (now - host0) / 1e9);
                    say.flush();
                }
                network.schedule(network.nowNs() + TICK_NS, this);
            }
        };
        network.schedule(TICK_NS, tick);
    }

    /** Worker {@code w}: its model, records, connection and training loop, to run in virtual time. */
    private Callable<WorkerResult> worker(final int w, final InProcessNetwork network, final VirtualClock clock, final int switchAddress,
                                          final JobKeys.Credential keys, final FashionMnist dataset, final float[] testPixels, final int[] testLabels,
                                          final List<AutoCloseable> open) throws Exception {
        final DjlModel net = new DjlModel(t.model(), t.batch(), t.learningRate(), t.momentum(), t.seed());
        open.add(net);
        // no host compute in the records: a run in virtual time is the same run whatever the host's speed
        final RoundRecords log = new RoundRecords(w, rounds, records.apply(w), null, false, clock);
        open.add(log);
        t.lrSchedule().applyTo(net, rounds);
        final WorkerContext context = new WorkerContext().link(t.link()).jobId(s.job()).key(keys.keyOf(s.job(), w)).workerId(w).workers(s.workers())
            .elementsPerRound(net.elements());
        final WorkerHost host = WorkerHost.inProcess(context, network, switchAddress,
            ex -> System.err.println("worker " + w + " error: " + ex));
        final GlobalBatch sizes = new GlobalBatch(t.batch(), s.workers(), t.rebalance());
        final ModelCopies copies = t.deferredEval() ? ModelCopies.forRun(rounds, t.evalEvery(), net.elements()) : null;
        final LoopOptions options = new LoopOptions(w, t, t.profile(s.workers()), false, "the in-process switch",
            null, null, 0, null, null, evaluationShare, clock);
        final TrainingLoop loop = new TrainingLoop(host, net, () -> Batches.ofWorker(dataset.train, w, s.workers(), t.batch(), sizes.max(),
            t.seed()), sizes, log, copies, testPixels, testLabels, rounds, options);
        return () -> {
            if (!clock.awaitUntil(host.joined(), clock.nanoTime() + TimeUnit.SECONDS.toNanos(t.timeoutSeconds()))) {
                throw new IllegalStateException("worker " + w + ": not joined within " + t.timeoutSeconds() + " s of virtual time");
            }
            host.joined().get();
            return loop.run();
        };
    }
}
