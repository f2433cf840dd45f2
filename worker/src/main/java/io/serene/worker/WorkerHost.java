package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.PacketEndpoint;
import io.serene.protocol.sync.StepLayout;
import io.serene.transport.InProcessHost;
import io.serene.transport.InProcessNetwork;
import io.serene.transport.ModelledLink;
import io.serene.transport.PacketHost;
import io.serene.transport.ShmOptions;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A worker on a link to its switch: a {@link WorkerEngine} on its own UDP socket or its own
 * shared-memory ring, served by a transport's thread, with a thread-safe API. {@link #allreduce} may be called from any thread; it scans the
 * gradient's chunk exponents on the caller's thread and hands the rest to the event loop.
 */
public final class WorkerHost implements AutoCloseable {
    private final WorkerEngine engine;
    private final PacketHost host;
    /** The modelled link the engine's packets cross, or null. */
    private final ModelledLink link;

    private WorkerHost(final WorkerEngine engine, final ModelledLink link, final PacketHost host) {
        this.engine = engine;
        this.link = link;
        this.host = host;
    }

    /** The engine, behind the context's modelled link if it models one. */
    private static PacketEndpoint endpoint(final WorkerEngine engine, final ModelledLink link) {
        return link != null ? link : engine;
    }

    private static ModelledLink linkOf(final WorkerContext context, final WorkerEngine engine) {
        return context.link().modelled() ? new ModelledLink(engine, context.link()) : null;
    }

    /**
     * Binds a socket on {@code local} and starts joining the job at the switch; see {@link #joined()}.
     * The context's switch port is set to the switch's peer number on this socket.
     */
    public static WorkerHost start(final WorkerContext context, final InetSocketAddress switchAddress,
                                  final InetSocketAddress local, final UdpTransport transport, final UdpOptions options,
                                  final Consumer<Throwable> errorHandler) {
        final WorkerEngine engine = new WorkerEngine(context.switchPort(0), errorHandler);
        final ModelledLink link = linkOf(context, engine);
        return new WorkerHost(engine, link, transport.bind(endpoint(engine, link), local, options, switchAddress));
    }

    /**
     * Connects to the switch serving shared memory at {@code directory} (a worker on the switch's
     * host) and starts joining the job; the switch is the link's port 0.
     */
    public static WorkerHost connect(final WorkerContext context, final java.nio.file.Path directory,
                                     final ShmTransport transport, final ShmOptions options,
                                     final Consumer<Throwable> errorHandler) {
        final WorkerEngine engine = new WorkerEngine(context.switchPort(0), errorHandler);
        final ModelledLink link = linkOf(context, engine);
        return new WorkerHost(engine, link, transport.connect(endpoint(engine, link), directory, options));
    }

    /**
     * Attaches a worker to an in-process network in virtual time ({@link VirtualClock}) and starts
     * joining the job at the switch attached there at {@code switchAddress}.
     */
    public static WorkerHost inProcess(final WorkerContext context, final InProcessNetwork network, final int switchAddress,
                                       final Consumer<Throwable> errorHandler) {
        final WorkerEngine engine = new WorkerEngine(context.switchPort(switchAddress), errorHandler);
        final ModelledLink link = linkOf(context, engine);
        return new WorkerHost(engine, link, InProcessHost.attach(network, endpoint(engine, link)));
    }

    /** Workers in the job (the context's, fixed at start: readable from any thread). */
    public int workers() {
        return engine.context().workers();
    }

    /** Completes when the switch accepted the JOIN; fails with the switch's reason or after the retries. */
    public CompletableFuture<Void> joined() {
        return engine.joined();
    }

    /**
     * Contributes this worker's gradient for a round (0, 1, 2, ... in order). The engine copies the
     * array on its thread before it runs any call made after this one (its calls run in order): once
     * such a call completed ({@link #startRound}, say), the caller may write the array again.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient) {
        return allreduce(round, gradient, 0);
    }

    /**
     * {@link #allreduce(int, float[])} reporting this worker's compute time for the round (ns, 0:
     * none), which its packets carry to the switch's telemetry.
     */
    public CompletableFuture<Aggregate> allreduce(final int round, final float[] gradient, final long computeNs) {
        final CompletableFuture<Void> joined = engine.joined();
        if (joined.isDone() && !joined.isCompletedExceptionally() && gradient.length == engine.context().elementsPerRound()) {
            final int k = engine.chunkElements();
            final byte[] exponents = BlockFloat.chunkExponents(gradient, k, new byte[StepLayout.chunks(gradient.length, k)]);
            return host.call(() -> engine.allreduce(round, gradient, exponents, computeNs)).thenCompose(f -> f);
        }
        return host.call(() -> engine.allreduce(round, gradient, null, computeNs)).thenCompose(f -> f);
    }

    /** {@link WorkerEngine#skip}: a round this worker computed nothing for, from any thread. */
    public CompletableFuture<Aggregate> skip(final int round, final long computeNs) {
        return host.call(() -> engine.skip(round, computeNs)).thenCompose(f -> f);
    }

    /** {@link WorkerEngine#fold}: values to add to the next submitted round, from any thread. */
    public CompletableFuture<Void> fold(final float[] values) {
        return host.call(() -> {
            engine.fold(values);
            return null;
        });
    }

    /** {@link WorkerEngine#foldedInto}: the values the next submitted round folds in, copied into {@code into}, from any thread. */
    public CompletableFuture<Void> foldedInto(final float[] into) {
        return host.call(() -> {
            engine.foldedInto(into);
            return null;
        });
    }

    /** Completes once this worker may start computing {@code round} under the job's sync config (any thread). */
    public CompletableFuture<Void> awaitClearance(final int round) {
        return host.call(() -> engine.awaitClearance(round)).thenCompose(f -> f);
    }

    /**
     * What a training loop needs to start {@code round}, in one trip to the engine's thread (any
     * thread): whether the round's config is WBSP's, as the worker knows the config table now, and
     * its clearance, which completes with the round's bound (read on the engine's thread when the
     * round is cleared).
     */
    public CompletableFuture<RoundStart> startRound(final int round) {
        return host.call(() -> new RoundStart(engine.busyFor(round), engine.awaitClearance(round).thenApply(v -> engine.boundFor(round))));
    }

    /**
     * What a training loop asks before computing open round {@code round}, in one trip to the
     * engine's thread (any thread), holding a gradient of {@code heldRound} ({@link RoundPlan#NONE}:
     * none): whether that gradient goes with the next contribution ({@link WorkerEngine#foldsHeld}),
     * and the round's sit-out at {@code nowNs} ({@link WorkerEngine#sitOut}).
     */
    public CompletableFuture<CatchUpPlan> catchUp(final int round, final int heldRound, final long nowNs, final int lastRound) {
        return host.call(() -> new CatchUpPlan(engine.foldsHeld(round, heldRound), engine.sitOut(round, nowNs, lastRound)));
    }

    /** See {@link #catchUp}: {@code sitOut} is done at once unless the worker sits the round out. */
    public record CatchUpPlan(boolean foldsHeld, CompletableFuture<Boolean> sitOut) {
    }

    /** See {@link #startRound}: {@code cleared} completes with the round's bound once the worker may compute it. */
    public record RoundStart(boolean busy, CompletableFuture<Integer> cleared) {
    }

    /** A snapshot of the engine's counters, taken on its thread. */
    public String counters() {
        return host.call(() -> engine.counters().toString()).join();
    }

    /** The engine's counters object; read it on the engine's thread (see {@link #call}). */
    public Counters<WorkerCounter> liveCounters() {
        return engine.counters();
    }

    /** Runs a function on the engine's thread. */
    public <T> CompletableFuture<T> call(final Function<WorkerEngine, T> function) {
        return host.call(() -> function.apply(engine));
    }

    /** Makes the modelled link carry {@code factor} times slower from now on (1: at its rate); nothing without one (any thread). */
    public void slowLink(final double factor) {
        if (link != null) {
            host.execute(() -> link.slowdown(factor));
        }
    }

    /** What the modelled link carried so far, or null without one (from any thread). */
    public ModelledLink.Report linkReport() {
        return link == null ? null : host.call(link::report).join();
    }

    public PacketHost host() {
        return host;
    }

    /** Leaves the job (waiting up to two seconds for the switch's acknowledgement) and closes the socket. */
    @Override
    public void close() {
        host.call(engine::leave).thenCompose(f -> f).completeOnTimeout(null, 2, TimeUnit.SECONDS).join();
        host.close();
    }
}
