package io.serene.node;

import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.serene.controlplane.FinishedRounds;
import io.serene.controlplane.rpc.ConfigEntry;
import io.serene.controlplane.rpc.CountersReply;
import io.serene.controlplane.rpc.CountersRequest;
import io.serene.controlplane.rpc.JobRequest;
import io.serene.controlplane.rpc.JobState;
import io.serene.controlplane.rpc.SchemaReply;
import io.serene.controlplane.rpc.SchemaRequest;
import io.serene.controlplane.rpc.SwitchControlGrpc;
import io.serene.controlplane.rpc.Update;
import io.serene.controlplane.rpc.WatchRequest;
import io.serene.controlplane.rpc.WriteReply;
import io.serene.controlplane.rpc.WriteRequest;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.dataplane.TableSchema;
import io.serene.protocol.table.TableWrite;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * The switch's gRPC control service: every call runs on the switch's own thread (the data plane is
 * single-threaded), so reads see a consistent job and installs are ordered with packets exactly as
 * in-process ones. A config that does not parse or does not fit the job is INVALID_ARGUMENT, an
 * unknown job NOT_FOUND, a first round below the earliest safe one FAILED_PRECONDITION.
 */
public final class SwitchControlService extends SwitchControlGrpc.SwitchControlImplBase implements AutoCloseable {
    /** Runs a function on the switch's thread ({@code UdpHost::call}). */
    public interface SwitchThread {
        <T> CompletableFuture<T> call(Supplier<T> function);
    }

    private static final long CALL_TIMEOUT_S = 5;
    /** Updates one Write carries at most (a job's whole table is far fewer). */
    public static final int MAX_UPDATES_PER_WRITE = 256;
    /**
     * The shortest interval a watch stream may ask for (a remote policy's controller polls at it), and
     * how many may be open at once: at most 1,600 job reads a second on the switch's thread.
     */
    public static final int MIN_WATCH_INTERVAL_MS = 10;
    public static final int MAX_WATCH_STREAMS = 16;
    private final AtomicInteger watchStreams = new AtomicInteger();
    private final SwitchThread thread;
    private final SwitchPipeline pipeline;
    private final StallWatch stalls;
    private final Consumer<String> log;
    private volatile SilenceWatch silence;
    private final ScheduledExecutorService watchers = Executors.newSingleThreadScheduledExecutor(r -> {
        final Thread t = new Thread(r, "serene-control-watch");
        t.setDaemon(true);
        return t;
    });

    public SwitchControlService(final SwitchThread thread, final SwitchPipeline pipeline) {
        this(thread, pipeline, new StallWatch(StallWatch.DEFAULT_SECONDS), line -> { });
    }

    /**
     * With the stall threshold {@code serene control show} reports against, and where every table
     * write is logged, with its caller and result.
     */
    public SwitchControlService(final SwitchThread thread, final SwitchPipeline pipeline, final StallWatch stalls,
                                final Consumer<String> log) {
        this.thread = thread;
        this.pipeline = pipeline;
        this.stalls = stalls;
        this.log = log;
        // every call goes through the switch's command queue; a task on its thread makes it drain it
        pipeline.commands().wakeup(() -> thread.call(() -> null));
    }

    /** Reports the failure detector's silent workers in every job state (the monitor's {@link SilenceWatch}). */
    public SwitchControlService silence(final SilenceWatch watch) {
        this.silence = watch;
        return this;
    }

    @Override
    public void write(final WriteRequest request,
                      final StreamObserver<WriteReply> reply) {
        final List<TableWrite> writes = new ArrayList<>();
        if (request.getUpdatesCount() > MAX_UPDATES_PER_WRITE) {
            reply.onError(Status.INVALID_ARGUMENT.withDescription("a write carries at most " + MAX_UPDATES_PER_WRITE + " updates, this one "
                + request.getUpdatesCount()).asRuntimeException());
            return;
        }
        try {
            for (final Update u : request.getUpdatesList()) {
                // an install from the earliest round takes its round on the switch's thread (below); checked here as from round 0
                writes.add(TableWriteCodec.decode(request.getJob(), earliest(u) ? u.toBuilder().setFirstRound(0).build() : u));
            }
        } catch (final IllegalArgumentException ex) {
            reply.onError(Status.INVALID_ARGUMENT.withDescription(ex.getMessage()).asRuntimeException());
            return;
        }
        try {
            final WriteReply done = onSwitch(() -> {
                final WriteReply.Builder b = WriteReply.newBuilder();
                for (int i = 0; i < writes.size(); i++) {
                    final Update u = request.getUpdates(i);
                    if (earliest(u)) {
                        final int first = pipeline.earliestSwapRound(request.getJob());
                        writes.set(i, first < 0 ? writes.get(i) : writes.get(i).atFirstRound(first));
                        b.addResults((first < 0 ? io.serene.protocol.Status.UNKNOWN_JOB : pipeline.write(writes.get(i))).name());
                        b.addFirstRounds(first);
                    } else {
                        b.addResults(pipeline.write(writes.get(i)).name());
                        b.addFirstRounds(u.getFirstRound());
                    }
                }
                return b.setEpoch(pipeline.configEpoch(request.getJob())).build();
            });
            final List<String> lines = new ArrayList<>();
            for (int i = 0; i < writes.size(); i++) {
                lines.add(writes.get(i) + ": " + done.getResults(i));
            }
            log.accept("control: " + caller() + " wrote job " + request.getJob() + ": " + String.join(", ", lines) + " (epoch "
                + done.getEpoch() + ")");
            reply.onNext(done);
            reply.onCompleted();
        } catch (final Exception ex) {
            reply.onError(unavailable(ex));
        }
    }

    /** An install from the earliest round the switch allows (first round -1). */
    private static boolean earliest(final Update u) {
        return u.getKind() == Update.Kind.INSTALL && u.getFirstRound() < 0;
    }

    @Override
    public void readSchema(final SchemaRequest request,
                           final StreamObserver<SchemaReply> reply) {
        reply.onNext(SchemaReply.newBuilder()
            .setText(TableSchema.of(pipeline.context()).describe()).build());
        reply.onCompleted();
    }

    @Override
    public void readJob(final JobRequest request, final StreamObserver<JobState> reply) {
        try {
            final JobState state = onSwitch(() -> jobState(request.getJob()));
            if (state == null) {
                reply.onError(notFound(request.getJob()));
                return;
            }
            reply.onNext(state);
            reply.onCompleted();
        } catch (final Exception ex) {
            reply.onError(unavailable(ex));
        }
    }

    @Override
    public void readCounters(final CountersRequest request, final StreamObserver<CountersReply> reply) {
        try {
            final Map<SwitchCounter, Long> snapshot = onSwitch(() -> pipeline.counters().snapshot());
            final CountersReply.Builder b = CountersReply.newBuilder();
            snapshot.forEach((k, v) -> b.putValues(k.name().toLowerCase(Locale.ROOT), v));
            reply.onNext(b.build());
            reply.onCompleted();
        } catch (final Exception ex) {
            reply.onError(unavailable(ex));
        }
    }

    @Override
    public void watchJob(final WatchRequest request, final StreamObserver<JobState> reply) {
        final int intervalMs = request.getIntervalMs() <= 0 ? 100 : request.getIntervalMs();
        if (intervalMs < MIN_WATCH_INTERVAL_MS) {
            reply.onError(Status.INVALID_ARGUMENT.withDescription("a watch interval is at least " + MIN_WATCH_INTERVAL_MS + " ms, was "
                + intervalMs + " ms").asRuntimeException());
            return;
        }
        if (watchStreams.incrementAndGet() > MAX_WATCH_STREAMS) {
            watchStreams.decrementAndGet();
            reply.onError(Status.RESOURCE_EXHAUSTED.withDescription(MAX_WATCH_STREAMS + " watch streams are open on this switch "
                + "already; close one first").asRuntimeException());
            return;
        }
        final ServerCallStreamObserver<JobState> stream = (ServerCallStreamObserver<JobState>) reply;
        final ScheduledFuture<?>[] task = new ScheduledFuture<?>[1];
        final AtomicBoolean closed = new AtomicBoolean();
        final Runnable release = () -> {
            if (closed.compareAndSet(false, true)) {
                watchStreams.decrementAndGet();
            }
        };
        stream.setOnCancelHandler(() -> {
            release.run();
            if (task[0] != null) {
                task[0].cancel(false);
            }
        });
        task[0] = watchers.scheduleAtFixedRate(() -> {
            if (stream.isCancelled()) {
                release.run();
                task[0].cancel(false);
                return;
            }
            try {
                final JobState state = onSwitch(() -> jobState(request.getJob()));
                if (state == null) {
                    release.run();
                    task[0].cancel(false);
                    reply.onError(notFound(request.getJob()));
                    return;
                }
                reply.onNext(state);
            } catch (final Exception ex) {
                release.run();
                task[0].cancel(false);
                try {
                    reply.onError(unavailable(ex));
                } catch (final RuntimeException ignored) {
                    // the stream was closed meanwhile
                }
            }
        }, 0, intervalMs, TimeUnit.MILLISECONDS);
    }

    /** The job's registers, or null if the switch has no such job. Call on the switch's thread. */
    private JobState jobState(final int job) {
        final int workers = pipeline.workers(job);
        if (workers < 0) {
            return null;
        }
        final JobState.Builder b = JobState.newBuilder().setJob(job).setReleasedRound(pipeline.releasedRound(job))
            .setEpoch(pipeline.configEpoch(job)).setEarliestSwapRound(pipeline.earliestSwapRound(job))
            .setTimeNs(System.nanoTime())
            .setReleasedAtNs(pipeline.releasedAtNs(job, pipeline.releasedRound(job)));
        for (int w = 0; w < workers; w++) {
            b.addClocks(pipeline.clock(job, w));
            b.addIterationNs(pipeline.iterationNs(job, w));
            b.addGroups(pipeline.group(job, w));
        }
        final FinishedRounds finished = SwitchView.finished(pipeline, job);
        for (int w = 0; w < finished.workers(); w++) {
            b.addFinishedRound(finished.rounds()[w]).addFinishedComputeNs(finished.computeNs()[w]).addFinishedOffsetNs(finished.offsetNs()[w]);
        }
        final SwitchView.Job view = SwitchView.readJob(pipeline, job, Integer.MAX_VALUE);
        view.waitingFor().stream().forEach(b::addWaitingFor);
        final SilenceWatch detector = silence;
        for (int w = 0; detector != null && w < workers; w++) {
            if (detector.silent(job, w)) {
                b.addSilent(w);
            }
        }
        b.setWaitingSinceNs(view.waitingSinceNs()).setStalled(stalls.stalled(view, b.getTimeNs()));
        for (final SwitchPipeline.ConfigRow row : pipeline.configEntries(job)) {
            b.addEntries(ConfigEntry.newBuilder().setGroup(row.group()).setFirstRound(row.firstRound()).setRule(row.rule()));
        }
        return b.build();
    }

    /** The calling address, as the server's access interceptor recorded it. */
    private static String caller() {
        final java.net.SocketAddress a = ControlAccess.CALLER.get();
        return a == null ? "(in-process)" : a.toString().replaceFirst("^/", "");
    }

    private static RuntimeException notFound(final int job) {
        return Status.NOT_FOUND.withDescription("no job " + job + " on this switch").asRuntimeException();
    }

    private static RuntimeException unavailable(final Exception ex) {
        return Status.UNAVAILABLE.withDescription("switch thread: " + ex).asRuntimeException();
    }

    private <T> T onSwitch(final Supplier<T> function) throws Exception {
        return pipeline.commands().call(p -> function.get(), CALL_TIMEOUT_S, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        watchers.shutdownNow();
    }
}
