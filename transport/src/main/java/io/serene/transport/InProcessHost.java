package io.serene.transport;

import io.serene.protocol.PacketEndpoint;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * An endpoint on an {@link InProcessNetwork}, served in its virtual time. The network and whoever
 * calls in take turns (a run in virtual time lets one thread go at a time), so a task runs at once
 * on the caller's thread, at the network's current time; the endpoint's timer work and sends follow
 * at that time, in order with everything else.
 */
public final class InProcessHost implements PacketHost {
    private final InProcessNetwork network;
    private final int address;
    private long errors;
    private Throwable lastError;

    private InProcessHost(final InProcessNetwork network, final int address) {
        this.network = network;
        this.address = address;
    }

    /** Attaches {@code endpoint} to {@code network}. */
    public static InProcessHost attach(final InProcessNetwork network, final PacketEndpoint endpoint) {
        return new InProcessHost(network, network.attach(endpoint));
    }

    /** The endpoint's address on the network (the port its peers reach it on). */
    public int address() {
        return address;
    }

    @Override
    public void execute(final Runnable task) {
        try {
            task.run();
        } catch (final RuntimeException | Error ex) {
            errors++;
            lastError = ex;
        }
        network.wake(address);
    }

    @Override
    public <T> CompletableFuture<T> call(final Supplier<T> function) {
        final CompletableFuture<T> future = new CompletableFuture<>();
        try {
            future.complete(function.get());
        } catch (final RuntimeException | Error ex) {
            future.completeExceptionally(ex);
        }
        network.wake(address);
        return future;
    }

    @Override
    public long errors() {
        return errors;
    }

    @Override
    public Throwable lastError() {
        return lastError;
    }

    @Override
    public String batchingStats() {
        return "in process, virtual time";
    }

    @Override
    public String kind() {
        return "virtual";
    }

    @Override
    public void close() {
        // nothing held: the network goes with the run
    }
}
