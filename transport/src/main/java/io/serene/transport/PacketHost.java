package io.serene.transport;

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A sans-IO endpoint served by one thread over one link (a UDP socket, or shared-memory rings):
 * the single writer of the endpoint's state. Tasks run on that thread, in the order they were given
 * (a caller may rely on it: a task given after another sees what the first did), then the
 * endpoint's timer work, then what they emitted is sent.
 */
public interface PacketHost extends AutoCloseable {
    /** Runs a task on the endpoint's thread, then lets the endpoint do its work and sends. */
    void execute(Runnable task);

    /** Runs a function on the endpoint's thread and completes with its value. */
    <T> CompletableFuture<T> call(Supplier<T> function);

    /** Exceptions caught on the endpoint's thread (a data-plane loop never lets one escape). */
    long errors();

    /** The last of {@link #errors}, or null. */
    Throwable lastError();

    /** Packets sent and received and how they were batched, for logs. */
    String batchingStats();

    /** Which link serves the endpoint: "epoll", "nio" or "shm". */
    String kind();

    @Override
    void close();
}
