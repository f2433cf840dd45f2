package io.serene.harness.bench;

import io.serene.dataplane.SwitchContext;
import io.serene.protocol.DataPacket;
import io.serene.protocol.sync.StepLayout;
import io.serene.transport.FaultInjector;
import io.serene.transport.PacketHost;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** The raw-UDP baseline: an echo server where the switch was, echo clients where the workers were. */
final class Echo implements AutoCloseable {
    final PacketHost server;
    final List<EchoClient> clients = new ArrayList<>();
    final List<PacketHost> hosts = new ArrayList<>();
    final int packetsPerRound;

    Echo(final AllreduceBench.Config config, final SwitchContext switchContext, final Links links, final FaultInjector faults) {
        // the same injected loss as the aggregation, from seeds of its own
        server = links.serve(new EchoEndpoint(), faults.fork(2_000));
        final int k = switchContext.chunkElements();
        packetsPerRound = StepLayout.chunks(config.elements, k);
        final int window = Math.min(config.window, switchContext.memory().poolSize());
        for (int w = 0; w < config.workers; w++) {
            final EchoClient client = new EchoClient(0, DataPacket.length(k), window);
            final PacketHost host = links.connect(client, server, faults.fork(3_000 + w));
            clients.add(client);
            hosts.add(host);
        }
    }

    long round(final long timeoutSeconds) throws Exception {
        final List<CompletableFuture<Void>> futures = new ArrayList<>();
        final long start = System.nanoTime();
        for (int w = 0; w < clients.size(); w++) {
            final EchoClient client = clients.get(w);
            futures.add(hosts.get(w).call(() -> client.start(packetsPerRound)).thenCompose(f -> f));
        }
        try {
            CompletableFuture.allOf(futures.toArray(new CompletableFuture<?>[0])).get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            throw new IllegalStateException("raw echo baseline did not finish in " + timeoutSeconds + " s");
        }
        return System.nanoTime() - start;
    }

    @Override
    public void close() {
        for (final PacketHost host : hosts) {
            host.close();
        }
        server.close();
    }
}
