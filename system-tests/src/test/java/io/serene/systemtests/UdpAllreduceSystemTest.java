package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.transport.FaultInjector;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.Aggregate;
import io.serene.worker.UdpWorker;
import io.serene.worker.WorkerContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** A switch and four workers over real UDP sockets on loopback, with 5% injected loss. */
class UdpAllreduceSystemTest {
    @Test
    @Timeout(120)
    void fourWorkersGetExactSumsDespiteFivePercentLoss() throws Exception {
        final long seed = 2026;
        final int workers = 4;
        final int elements = 100_003;
        final int rounds = 4;
        final FaultInjector faults = new FaultInjector(seed, 0.05, 0.01, 0.01);
        final List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20).conclude(), errors::add);
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0),
                 UdpOptions.defaults().faults(faults.fork(99)))) {
            final List<UdpWorker> udpWorkers = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                udpWorkers.add(UdpWorker.start(new WorkerContext().jobId(5).workerId(w).workers(workers)
                        .elementsPerRound(elements), switchHost.localAddress(), new InetSocketAddress("127.0.0.1", 0),
                    workerLoop, UdpOptions.defaults().faults(faults.fork(w)), errors::add));
            }
            try {
                for (final UdpWorker worker : udpWorkers) {
                    worker.joined().get(20, TimeUnit.SECONDS);
                }
                new Gradients(seed, workers, elements).runExactRounds(udpWorkers, rounds, "seed " + seed);
            } finally {
                udpWorkers.forEach(UdpWorker::close);
            }
            assertThat(switchHost.call(() -> pipeline.counters().get(SwitchCounter.DUPLICATES)).get())
                .as("loss and duplication were exercised").isPositive();
            assertThat(errors).isEmpty();
        }
    }
}
