package io.serene.worker;

import io.serene.transport.InProcessNetwork;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

/**
 * Virtual time for a run whose workers all live in one process, over an {@link InProcessNetwork}:
 * each worker's training loop runs on a thread of its own, but only one thread goes at a time. A
 * worker runs until it waits (for a future, or until a time); then the network's events run, in
 * virtual time, until one makes a waiting worker ready, which goes next. Workers made ready at the
 * same virtual time go in the order they were made ready, so the same inputs give the same run,
 * whatever the host's speed or load: the run's times are the modelled ones, exactly (a worker's
 * real compute takes no virtual time; the modelled step it waits out does).
 *
 * <pre>
 *   driver:   run events ... worker 2 ready -> hand over -> wait ... worker 0 ready -> hand over -> ...
 *   worker 2:                                  compute, send, await aggregate (hands back)
 * </pre>
 */
public final class VirtualClock implements RunClock {
    /** A worker's thread, its turn, and what it waits for (0: nothing: it runs, or is ready). */
    private static final class Party {
        final Semaphore turn = new Semaphore(0);
        final int id;
        long waiting;
        Thread thread;
        Object result;
        Throwable failure;
        boolean done;

        Party(final int id) {
            this.id = id;
        }
    }

    private final InProcessNetwork network;
    private final Semaphore driver = new Semaphore(0);
    private final ArrayDeque<Party> ready = new ArrayDeque<>();
    private final ThreadLocal<Party> self = new ThreadLocal<>();
    private long waits;

    public VirtualClock(final InProcessNetwork network) {
        this.network = network;
    }

    @Override
    public long nanoTime() {
        return network.nowNs();
    }

    @Override
    public boolean virtual() {
        return true;
    }

    @Override
    public void parkUntil(final long deadlineNs) throws InterruptedException {
        if (deadlineNs <= network.nowNs()) {
            return;
        }
        final Party p = party();
        final long token = waitFor(p);
        network.schedule(deadlineNs, () -> wake(p, token));
        handBack(p);
    }

    @Override
    public boolean awaitUntil(final CompletableFuture<?> future, final long deadlineNs) throws InterruptedException {
        if (future.isDone()) {
            return true;
        }
        if (deadlineNs <= network.nowNs()) {
            return false;
        }
        final Party p = party();
        final long token = waitFor(p);
        future.whenComplete((v, e) -> wake(p, token));
        network.schedule(deadlineNs, () -> wake(p, token));
        handBack(p);
        return future.isDone();
    }

    /**
     * Runs each task on a thread of its own, one at a time, in virtual time, until all ended;
     * returns their results in order. A task that fails ends the run: the others are interrupted
     * and its failure is thrown. Tasks that all wait with no event left to wake them are a deadlock,
     * reported as such.
     */
    @SuppressWarnings("unchecked")
    public <T> List<T> run(final List<Callable<T>> tasks, final String name) throws Exception {
        final List<Party> parties = new ArrayList<>();
        for (int i = 0; i < tasks.size(); i++) {
            final Party p = new Party(i);
            final Callable<T> task = tasks.get(i);
            p.thread = new Thread(() -> {
                self.set(p);
                try {
                    p.turn.acquire();
                    p.result = task.call();
                } catch (final Throwable t) {
                    p.failure = t;
                } finally {
                    p.done = true;
                    driver.release();
                }
            }, name + "-" + i);
            p.thread.setDaemon(true);
            parties.add(p);
        }
        synchronized (this) {
            ready.addAll(parties);
        }
        parties.forEach(p -> p.thread.start());
        int live = parties.size();
        try {
            while (live > 0) {
                final Party next;
                synchronized (this) {
                    next = ready.poll();
                }
                if (next != null) {
                    next.turn.release();
                    driver.acquire();
                    if (next.done) {
                        live--;
                        if (next.failure != null) {
                            throw failure(next);
                        }
                    }
                    continue;
                }
                network.runUntil(this::anyReady, Long.MAX_VALUE);
                if (!anyReady()) {
                    throw new IllegalStateException("virtual time ran out of events at " + network.nowNs() / 1e9 + " s with " + live
                        + " workers waiting for each other: a deadlock");
                }
            }
        } finally {
            for (final Party p : parties) {
                if (!p.done) {
                    p.thread.interrupt();
                }
            }
        }
        final List<T> results = new ArrayList<>();
        for (final Party p : parties) {
            p.thread.join();
            results.add((T) p.result);
        }
        return results;
    }

    private static Exception failure(final Party p) {
        return p.failure instanceof Exception e ? e : new IllegalStateException("worker " + p.id + " failed", p.failure);
    }

    private synchronized boolean anyReady() {
        return !ready.isEmpty();
    }

    private Party party() {
        final Party p = self.get();
        if (p == null) {
            throw new IllegalStateException("virtual time waits only on a thread its run started");
        }
        return p;
    }

    private synchronized long waitFor(final Party p) {
        p.waiting = ++waits;
        return p.waiting;
    }

    /** Makes {@code p} ready if it still waits for what {@code token} named. */
    private synchronized void wake(final Party p, final long token) {
        if (p.waiting == token) {
            p.waiting = 0;
            ready.add(p);
        }
    }

    /** Hands the run back to the driver and waits for this worker's next turn. */
    private void handBack(final Party p) throws InterruptedException {
        driver.release();
        p.turn.acquire();
    }
}
