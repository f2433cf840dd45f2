package io.serene.dataplane;

import io.serene.protocol.Status;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Function;

/**
 * The switch's single-writer command queue: any thread submits table writes and reads, the switch
 * thread runs them in submission order between packets ({@link SwitchPipeline#onTimer}), so the data
 * plane's state has one writer and a read sees one consistent moment. A wake-up (set by whoever
 * runs the switch thread, e.g. a task posted to its event loop) makes the switch drain the queue
 * without waiting for a packet.
 */
public final class SwitchCommands {
    private final ConcurrentLinkedQueue<Runnable> queue = new ConcurrentLinkedQueue<>();
    private final SwitchPipeline pipeline;
    private volatile Runnable wakeup = () -> { };

    SwitchCommands(final SwitchPipeline pipeline) {
        this.pipeline = pipeline;
    }

    /** Sets what makes the switch thread call {@link SwitchPipeline#onTimer} soon. */
    public void wakeup(final Runnable wakeup) {
        this.wakeup = wakeup;
    }

    /** Queues a command; its future completes on the switch thread (exceptionally if it threw). */
    public <T> CompletableFuture<T> submit(final Function<SwitchPipeline, T> command) {
        final CompletableFuture<T> future = new CompletableFuture<>();
        queue.add(() -> {
            try {
                future.complete(command.apply(pipeline));
            } catch (final RuntimeException ex) {
                future.completeExceptionally(ex);
            }
        });
        wakeup.run();
        return future;
    }

    /** Writes a table entry (see {@link SwitchPipeline#write}). */
    public CompletableFuture<Status> write(final TableWrite write) {
        return submit(p -> p.write(write));
    }

    /** Reads a job's worker_group and sync_config entries (see {@link SwitchPipeline#entries}; empty for an unknown job). */
    public CompletableFuture<List<TableEntry>> readEntries(final int job) {
        return submit(p -> p.entries(job));
    }

    /** Runs every queued command (switch thread). */
    void drain() {
        Runnable command;
        while ((command = queue.poll()) != null) {
            command.run();
        }
    }

    boolean isEmpty() {
        return queue.isEmpty();
    }
}
