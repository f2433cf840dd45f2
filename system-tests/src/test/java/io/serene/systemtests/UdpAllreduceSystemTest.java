package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchCounter;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.sync.SyncConfig;
import io.serene.transport.FaultInjector;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerCounter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
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
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20).conclude(), errors::add);
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0),
                 UdpOptions.defaults().faults(faults.fork(99)))) {
            final List<WorkerHost> udpWorkers = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                udpWorkers.add(WorkerHost.start(new WorkerContext().jobId(5).workerId(w).workers(workers)
                        .elementsPerRound(elements), switchHost.localAddress(), new InetSocketAddress("127.0.0.1", 0),
                    workerLoop, UdpOptions.defaults().faults(faults.fork(w)), errors::add));
            }
            try {
                for (final WorkerHost worker : udpWorkers) {
                    worker.joined().get(20, TimeUnit.SECONDS);
                }
                new Gradients(seed, workers, elements).runExactRounds(udpWorkers, rounds, "seed " + seed);
            } finally {
                udpWorkers.forEach(WorkerHost::close);
            }
            assertThat(switchHost.call(() -> pipeline.counters().get(SwitchCounter.DUPLICATES)).get())
                .as("loss and duplication were exercised").isPositive();
            assertThat(errors).isEmpty();
        }
    }

    @Test
    @Timeout(120)
    void fastestThreeOfFourOverUdpLeavesTheSlowWorkerOutAndFoldsItsGradients() throws Exception {
        final int workers = 4;
        final int elements = 2_000;
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20)
            .defaultSync(SyncConfig.fastest(3)).conclude(), errors::add);
        try (UdpTransport switchLoop = UdpTransport.create(1, true);
             UdpTransport workerLoop = UdpTransport.create(1, true);
             UdpHost switchHost = switchLoop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults())) {
            final List<WorkerHost> udpWorkers = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                udpWorkers.add(WorkerHost.start(new WorkerContext().jobId(6).workerId(w).workers(workers)
                        .elementsPerRound(elements), switchHost.localAddress(), new InetSocketAddress("127.0.0.1", 0),
                    workerLoop, UdpOptions.defaults(), errors::add));
            }
            try {
                for (final WorkerHost worker : udpWorkers) {
                    worker.joined().get(20, TimeUnit.SECONDS);
                }
                final float[] g = new float[elements];
                Arrays.fill(g, 1f);
                for (int round = 0; round < 5; round++) {
                    final List<CompletableFuture<Aggregate>> futures = new ArrayList<>();
                    for (int w = 0; w < workers - 1; w++) {
                        udpWorkers.get(w).awaitClearance(round).get(20, TimeUnit.SECONDS);
                        futures.add(udpWorkers.get(w).allreduce(round, g));
                    }
                    final List<Aggregate> aggregates = new ArrayList<>();
                    for (final CompletableFuture<Aggregate> f : futures) {
                        aggregates.add(f.get(30, TimeUnit.SECONDS));
                    }
                    // the slow worker contributes after the round was released without it
                    final Aggregate late = udpWorkers.get(workers - 1).allreduce(round, g).get(30, TimeUnit.SECONDS);
                    for (final Aggregate a : aggregates) {
                        assertThat(a.integerSums()).isEqualTo(late.integerSums());
                        assertThat(a.contributorCount()).isEqualTo(3);
                        assertThat(a.chunkContributors(0).get(workers - 1)).isFalse();
                    }
                }
                final long folded = udpWorkers.get(workers - 1).call(e -> e.counters().get(
                    WorkerCounter.FOLDED_CHUNKS)).get();
                assertThat(folded).as("every chunk of the slow worker folded").isEqualTo(5L * 8);
            } finally {
                udpWorkers.forEach(WorkerHost::close);
            }
            assertThat(errors).isEmpty();
        }
    }
}
