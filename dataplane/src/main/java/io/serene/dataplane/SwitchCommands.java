package io.serene.dataplane;

import io.serene.protocol.Status;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;

import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * The switch's single-writer command queue: any thread submits table writes and reads, the switch
 * thread runs them in submission order between packets ({@link SwitchPipeline#onTimer}), so the data
 * plane's state has one writer and a read sees one consistent moment. A wake-up (set by whoever
 * runs the switch thread, e.g. a task posted to its event loop) makes the switch drain the queue
 * without waiting for a packet.
 *
 * <p>Bounded: at most {@link #CAPACITY} commands wait (a submit beyond fails at once: the switch
 * thread is behind), and a drain runs at most {@link #DRAIN_LIMIT} of them, so packets get their turn
 * between. A command whose caller gave up waiting ({@link #call}) is not run later.
 */
public final class SwitchCommands {
    /** Commands waiting at most. */
    public static final int CAPACITY = 1024;
    /** Commands run per drain; the rest wait for the next turn of the switch thread. */
    public static final int DRAIN_LIMIT = 64;

    /** A queued command: run once, unless its caller claimed it first (gave up waiting). */
    private static final class Command implements Runnable {
        private final AtomicBoolean claimed = new AtomicBoolean();
        private final Runnable body;

        Command(final Runnable body) {
            this.body = body;
        }

        @Override
        public void run() {
            if (claimed.compareAndSet(false, true)) {
                body.run();
            }
        }
    }

    private final ArrayBlockingQueue<Command> queue = new ArrayBlockingQueue<>(CAPACITY);
    private final SwitchPipeline pipeline;
    private volatile Runnable wakeup = () -> { };

    SwitchCommands(final SwitchPipeline pipeline) {
        this.pipeline = pipeline;
    }

    /** Sets what makes the switch thread call {@link SwitchPipeline#onTimer} soon. */
    public void wakeup(final Runnable wakeup) {
        this.wakeup = wakeup;
    }

    /**
     * Queues a command; its future completes on the switch thread (exceptionally if it threw, or at
     * once if {@link #CAPACITY} commands are waiting already).
     */
    public <T> CompletableFuture<T> submit(final Function<SwitchPipeline, T> command) {
        return enqueue(command, new CompletableFuture<>()).future;
    }

    /**
     * Runs a command on the switch thread and waits for its result up to {@code timeout}. A command
     * the switch thread did not start by then is not run at all (a write that timed out is not
     * applied later): a {@link TimeoutException} saying so. One it started is waited for to its end.
     */
    public <T> T call(final Function<SwitchPipeline, T> command, final long timeout, final TimeUnit unit)
        throws InterruptedException, ExecutionException, TimeoutException {
        final Queued<T> q = enqueue(command, new CompletableFuture<>());
        try {
            return q.future.get(timeout, unit);
        } catch (final TimeoutException ex) {
            if (q.command == null || q.command.claimed.compareAndSet(false, true)) {
                throw new TimeoutException("the switch thread did not take the command within " + unit.toMillis(timeout)
                    + " ms; it was not applied and will not be");
            }
            // started meanwhile on the switch thread: its end is moments away
            return q.future.get();
        }
    }

    private record Queued<T>(CompletableFuture<T> future, Command command) {
    }

    private <T> Queued<T> enqueue(final Function<SwitchPipeline, T> command, final CompletableFuture<T> future) {
        final Command c = new Command(() -> {
            try {
                future.complete(command.apply(pipeline));
            } catch (final RuntimeException ex) {
                future.completeExceptionally(ex);
            }
        });
        if (!queue.offer(c)) {
            future.completeExceptionally(new IllegalStateException("the switch's command queue is full (" + CAPACITY
                + " commands waiting): the switch thread is behind; try again"));
            return new Queued<>(future, null);
        }
        wakeup.run();
        return new Queued<>(future, c);
    }

    /** Writes a table entry (see {@link SwitchPipeline#write}). */
    public CompletableFuture<Status> write(final TableWrite write) {
        return submit(p -> p.write(write));
    }

    /** Reads a job's worker_group and sync_config entries (see {@link SwitchPipeline#entries}; empty for an unknown job). */
    public CompletableFuture<List<TableEntry>> readEntries(final int job) {
        return submit(p -> p.entries(job));
    }

    /** Whether commands wait for the switch's thread (a data plane below reads its registers fresh before they run). */
    public boolean pending() {
        return !queue.isEmpty();
    }

    /** Runs up to {@link #DRAIN_LIMIT} queued commands (switch thread); whether any are left. */
    boolean drain() {
        for (int i = 0; i < DRAIN_LIMIT; i++) {
            final Command command = queue.poll();
            if (command == null) {
                return false;
            }
            command.run();
        }
        return !queue.isEmpty();
    }

    boolean isEmpty() {
        return queue.isEmpty();
    }
}
