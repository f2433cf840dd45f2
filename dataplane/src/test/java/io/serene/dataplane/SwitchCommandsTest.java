package io.serene.dataplane;

import io.serene.protocol.PacketEndpoint;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The switch's command queue: bounded, drained a limited number at a time, a command given up on never run. */
class SwitchCommandsTest {
    private final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(1).maxWorkers(4)
        .conclude(), ex -> { });
    private final SwitchCommands commands = pipeline.commands();

    @Test
    void aFullQueueRefusesAtOnceAndADrainRunsALimitedNumberWithTheTimerBackAtOnce() throws Exception {
        final AtomicInteger ran = new AtomicInteger();
        final List<CompletableFuture<Integer>> futures = new ArrayList<>();
        for (int i = 0; i < SwitchCommands.CAPACITY + 1; i++) {
            futures.add(commands.submit(p -> ran.incrementAndGet()));
        }
        final CompletableFuture<Integer> refused = futures.get(SwitchCommands.CAPACITY);
        assertThat(refused).isCompletedExceptionally();
        assertThatThrownBy(refused::join).hasMessageContaining("command queue is full (1024 commands waiting)");
        // one timer call runs DRAIN_LIMIT of them and asks to be called again now
        assertThat(pipeline.onTimer(1_000, (port, buffer, offset, length) -> { })).isEqualTo(1_000);
        assertThat(ran.get()).isEqualTo(SwitchCommands.DRAIN_LIMIT);
        long now = 1_000;
        while (ran.get() < SwitchCommands.CAPACITY) {
            now++;
            pipeline.onTimer(now, (port, buffer, offset, length) -> { });
        }
        assertThat(futures.get(0).get()).isEqualTo(1);
        assertThat(pipeline.onTimer(now + 1, (port, buffer, offset, length) -> { })).as("nothing left: no timer for commands")
            .isEqualTo(PacketEndpoint.NO_DEADLINE);
    }

    @Test
    void aCommandItsCallerGaveUpOnIsNeverRun() throws Exception {
        final AtomicInteger ran = new AtomicInteger();
        assertThatThrownBy(() -> commands.call(p -> ran.incrementAndGet(), 50, TimeUnit.MILLISECONDS))
            .isInstanceOf(TimeoutException.class).hasMessageContaining("it was not applied and will not be");
        pipeline.onTimer(1, (port, buffer, offset, length) -> { });
        assertThat(ran.get()).as("not applied later").isZero();
        // a command the switch thread runs in time answers
        final Thread switchThread = new Thread(() -> {
            while (ran.get() == 0) {
                pipeline.onTimer(2, (port, buffer, offset, length) -> { });
                Thread.onSpinWait();
            }
        });
        switchThread.start();
        final int answer = commands.call(p -> ran.incrementAndGet(), 5, TimeUnit.SECONDS);
        assertThat(answer).isEqualTo(1);
        switchThread.join(5_000);
    }
}
