package io.serene.worker;

import io.serene.transport.FaultInjector;
import io.serene.transport.InProcessNetwork;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class VirtualClockTest {
    private static final long MS = 1_000_000L;

    private final InProcessNetwork network = new InProcessNetwork(FaultInjector.none(), 0, 0, 0);
    private final VirtualClock clock = new VirtualClock(network);
    private final List<String> trace = Collections.synchronizedList(new ArrayList<>());

    @Test
    void partiesWaitInVirtualTimeOneAtATimeInTheOrderTheyWereMadeReady() throws Exception {
        final List<Callable<Long>> parties = new ArrayList<>();
        for (int p = 0; p < 3; p++) {
            final int id = p;
            parties.add(() -> {
                for (int step = 1; step <= 3; step++) {
                    // party 0 steps every 30 ms, 1 every 20, 2 every 10: 2 and 0 meet at 30 ms, 1 and 0 at 60
                    clock.parkUntil(clock.nanoTime() + (30 - 10L * id) * MS);
                    trace.add(id + "@" + clock.nanoTime() / MS);
                }
                return clock.nanoTime();
            });
        }
        final List<Long> ends = clock.run(parties, "test");
        assertThat(ends).containsExactly(90 * MS, 60 * MS, 30 * MS);
        assertThat(trace).containsExactly("2@10", "1@20", "2@20", "0@30", "2@30", "1@40", "0@60", "1@60", "0@90");
    }

    @Test
    void aPartyWaitingForAFutureGoesOnWhenAnEventCompletesItOrAtItsDeadline() throws Exception {
        final CompletableFuture<String> arrives = new CompletableFuture<>();
        final CompletableFuture<String> never = new CompletableFuture<>();
        network.schedule(7 * MS, () -> arrives.complete("aggregate"));
        final List<Long> ends = clock.run(List.of(() -> {
            assertThat(clock.awaitUntil(arrives, 100 * MS)).isTrue();
            final long at = clock.nanoTime();
            assertThat(clock.awaitUntil(never, at + 5 * MS)).as("not done by its deadline").isFalse();
            trace.add("arrived@" + at / MS + ", gave up@" + clock.nanoTime() / MS);
            assertThat(clock.awaitUntil(arrives, 0)).as("done: no wait").isTrue();
            return clock.nanoTime();
        }), "test");
        assertThat(trace).containsExactly("arrived@7, gave up@12");
        assertThat(ends).containsExactly(12 * MS);
    }

    @Test
    void aPartyThatFailsEndsTheRunWithItsFailure() {
        final CompletableFuture<Void> never = new CompletableFuture<>();
        assertThatThrownBy(() -> clock.run(List.<Callable<Object>>of(() -> {
            clock.parkUntil(3 * MS);
            throw new IllegalStateException("worker 0: diverged");
        }, () -> {
            clock.awaitUntil(never, Long.MAX_VALUE);
            return null;
        }), "test")).isInstanceOf(IllegalStateException.class).hasMessage("worker 0: diverged");
    }

    @Test
    void waitingOutsideARunIsAnError() {
        assertThatThrownBy(() -> clock.parkUntil(5 * MS)).hasMessageContaining("only on a thread its run started");
        assertThat(clock.virtual()).isTrue();
        assertThat(RunClock.HOST.virtual()).isFalse();
    }
}
