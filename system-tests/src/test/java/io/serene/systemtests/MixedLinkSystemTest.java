package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.transport.FaultInjector;
import io.serene.transport.ShmServer;
import io.serene.transport.ShmOptions;
import io.serene.transport.ShmTransport;
import io.serene.transport.UdpBridge;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerHost;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** One job whose workers reach the switch two ways: over shared memory on its host, over UDP from elsewhere. */
class MixedLinkSystemTest {
    @Test
    @Timeout(120)
    void workersOverSharedMemoryAndOverUdpAggregateExactlyInOneJob(@TempDir final Path dir) throws Exception {
        final long seed = 31;
        final int workers = 4;
        final int elements = 50_021;
        final FaultInjector faults = new FaultInjector(seed, 0.03, 0.01, 0.01);
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(4 << 20).conclude(), errors::add);
        final Path link = dir.resolve("link");
        try (ShmTransport switchLoop = ShmTransport.create(1);
             UdpTransport bridgeLoop = UdpTransport.create(1, true);
             ShmServer switchHost = switchLoop.serve(pipeline, link, ShmOptions.defaults());
             UdpBridge bridge = UdpBridge.attach(switchHost, bridgeLoop, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             ShmTransport shmWorkers = ShmTransport.create(1);
             UdpTransport udpWorkers = UdpTransport.create(1, true)) {
            final List<WorkerHost> hosts = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                final WorkerContext context = new WorkerContext().jobId(6).workerId(w).workers(workers).elementsPerRound(elements);
                // workers 0 and 2 on the switch's host, 1 and 3 over UDP with loss, duplication and reordering
                hosts.add(w % 2 == 0
                    ? WorkerHost.connect(context, link, shmWorkers, ShmOptions.defaults().faults(faults.fork(w)), errors::add)
                    : WorkerHost.start(context, bridge.localAddress(), new InetSocketAddress("127.0.0.1", 0), udpWorkers,
                        UdpOptions.defaults().faults(faults.fork(w)), errors::add));
            }
            try {
                for (final WorkerHost worker : hosts) {
                    worker.joined().get(20, TimeUnit.SECONDS);
                }
                assertThat(hosts.get(0).host().kind()).isEqualTo("shm");
                assertThat(hosts.get(1).host().kind()).isNotEqualTo("shm");
                new Gradients(seed, workers, elements).runExactRounds(hosts, 4, "seed " + seed);
            } finally {
                hosts.forEach(WorkerHost::close);
            }
            assertThat(bridge.dropped()).as("no packet lost between the threads").isZero();
            assertThat(errors).isEmpty();
            assertThat(switchHost.errors()).isZero();
        }
    }
}
