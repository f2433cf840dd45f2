package io.serene.systemtests;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.sync.SyncConfig;
import io.serene.transport.UdpHost;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerHost;
import io.serene.worker.WorkerNode;
import io.serene.worker.agent.AgentFrames;
import io.serene.worker.agent.AgentServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The worker agent's protocol (AgentFrames) spoken by a Java client: two agents of one job through a switch in this process. */
class AgentProtocolSystemTest {
    private static final int ELEMENTS = 600;

    @Test
    @Timeout(60)
    void twoAgentsAverageTheirClientsGradientsAndRefuseWhatTheyCannotServe(@TempDir final Path dir) throws Exception {
        final List<Throwable> errors = Collections.synchronizedList(new ArrayList<>());
        final SwitchPipeline pipeline = new SwitchPipeline(new SwitchContext().budgetBytes(8 << 20).defaultSync(SyncConfig.bsp()).conclude(),
            errors::add);
        try (UdpTransport loop = UdpTransport.create(1, true);
             UdpHost host = loop.bind(pipeline, new InetSocketAddress("127.0.0.1", 0), UdpOptions.defaults());
             WorkerNode node = WorkerNode.to("--switch", "127.0.0.1:" + host.localAddress().getPort())) {
            final Path[] sockets = {dir.resolve("a0.sock"), dir.resolve("a1.sock")};
            Files.createFile(sockets[1]); // left by an agent that died: replaced
            final List<AgentServer> agents = new ArrayList<>();
            final List<CompletableFuture<String>> ends = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final int rank = r;
                final AgentServer agent = AgentServer.listen(sockets[r], r, 2, 20, elements -> join(node, rank, elements));
                agents.add(agent);
                ends.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return agent.serve(20);
                    } catch (final Exception ex) {
                        throw new IllegalStateException(ex);
                    }
                }));
            }
            assertThatThrownBy(() -> AgentServer.listen(sockets[0], 0, 2, 20, e -> null))
                .hasMessageContaining("an agent already listens at");
            final List<SocketChannel> clients = new ArrayList<>();
            final List<FloatBuffer> shared = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                final SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(sockets[r]));
                clients.add(ch);
                new AgentFrames.Out(AgentFrames.HELLO).i32(AgentFrames.MAGIC).u16(AgentFrames.VERSION).i32(r).i32(2).i32(ELEMENTS).send(ch);
            }
            final AgentFrames.Reader reader = new AgentFrames.Reader();
            for (int r = 0; r < 2; r++) {
                final AgentFrames.Frame welcome = reader.read(clients.get(r));
                assertThat(welcome.type()).isEqualTo(AgentFrames.WELCOME);
                assertThat(welcome.u16()).isEqualTo(AgentFrames.VERSION);
                assertThat(welcome.i32()).isEqualTo(ELEMENTS);
                try (FileChannel fc = FileChannel.open(Path.of(welcome.string()), java.nio.file.StandardOpenOption.READ,
                    java.nio.file.StandardOpenOption.WRITE)) {
                    shared.add(fc.map(FileChannel.MapMode.READ_WRITE, 0, 4L * ELEMENTS).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer());
                }
                assertThat(welcome.string()).isEqualTo("bound 0, late: fold (epoch 0)");
            }
            // a second client of rank 0 is told why and closed
            try (SocketChannel second = SocketChannel.open(UnixDomainSocketAddress.of(sockets[0]))) {
                final AgentFrames.Frame refused = reader.read(second);
                assertThat(refused.type()).isEqualTo(AgentFrames.ERROR);
                assertThat(refused.string()).contains("a rank joins once");
            }
            for (int round = 0; round < 3; round++) {
                for (int r = 0; r < 2; r++) {
                    for (int i = 0; i < 500; i++) {
                        shared.get(r).put(i, (r + 1) * (i + round));
                    }
                    new AgentFrames.Out(AgentFrames.ALLREDUCE).i32(round).i32(500).i32(2_000).send(clients.get(r));
                }
                for (int r = 0; r < 2; r++) {
                    final AgentFrames.Frame result = reader.read(clients.get(r));
                    assertThat(result.type()).isEqualTo(AgentFrames.RESULT);
                    assertThat(result.i32()).isEqualTo(round);
                    assertThat(result.i32()).as("contributors").isEqualTo(2);
                    assertThat(result.i32()).as("not skipped").isZero();
                    for (int i = 0; i < 500; i++) {
                        assertThat(shared.get(r).get(i)).isCloseTo(1.5f * (i + round), org.assertj.core.data.Offset.offset(1e-3f));
                    }
                }
            }
            new AgentFrames.Out(AgentFrames.RELEASED).send(clients.get(0));
            final AgentFrames.Frame released = reader.read(clients.get(0));
            assertThat(released.type()).isEqualTo(AgentFrames.RELEASED_IS);
            assertThat(released.i32()).as("R after three rounds").isEqualTo(2);
            new AgentFrames.Out(AgentFrames.CLEARANCE).i32(3).send(clients.get(0));
            final AgentFrames.Frame cleared = reader.read(clients.get(0));
            assertThat(cleared.type()).isEqualTo(AgentFrames.CLEARED);
            assertThat(cleared.i32()).isEqualTo(3);
            assertThat(cleared.i32()).as("BSP's bound").isZero();
            // a round out of order ends the session with the reason
            new AgentFrames.Out(AgentFrames.ALLREDUCE).i32(7).i32(500).i32(0).send(clients.get(0));
            final AgentFrames.Frame refused = reader.read(clients.get(0));
            assertThat(refused.type()).isEqualTo(AgentFrames.ERROR);
            assertThat(refused.string()).contains("round 7 out of order").contains("the next is 3");
            assertThat(ends.get(0).get()).startsWith("refused: round 7 out of order");
            new AgentFrames.Out(AgentFrames.BYE).send(clients.get(1));
            // how it ended, with the engine's counters for the log
            assertThat(ends.get(1).get()).startsWith("client said bye; counters ").contains("rounds_completed=3");
            for (final AgentServer a : agents) {
                a.close();
            }
            assertThat(sockets[0]).doesNotExist();
            assertThat(errors).isEmpty();
        }
    }

    @Test
    @Timeout(30)
    void aClientOfAnotherRankOrVersionIsRefused(@TempDir final Path dir) throws Exception {
        final Path socket = dir.resolve("a.sock");
        try (AgentServer agent = AgentServer.listen(socket, 1, 4, 5, e -> {
            throw new IllegalStateException("not reached");
        })) {
            final CompletableFuture<String> end = CompletableFuture.supplyAsync(() -> {
                try {
                    return agent.serve(10);
                } catch (final Exception ex) {
                    throw new IllegalStateException(ex);
                }
            });
            try (SocketChannel ch = SocketChannel.open(UnixDomainSocketAddress.of(socket))) {
                new AgentFrames.Out(AgentFrames.HELLO).i32(AgentFrames.MAGIC).u16(AgentFrames.VERSION).i32(2).i32(4).i32(10).send(ch);
                final AgentFrames.Frame f = new AgentFrames.Reader().read(ch);
                assertThat(f.type()).isEqualTo(AgentFrames.ERROR);
                assertThat(f.string()).isEqualTo("the client is rank 2 of 4, this agent serves rank 1 of 4");
            }
            assertThat(end.get()).startsWith("refused");
        }
    }

    private static WorkerHost join(final WorkerNode node, final int rank, final int elements) {
        final WorkerHost host = node.connect(new WorkerContext().jobId(5).workerId(rank).workers(2).elementsPerRound(elements), ex -> { });
        try {
            node.awaitJoin(host, rank, 5, 10);
        } catch (final InterruptedException ex) {
            throw new IllegalStateException(ex);
        }
        return host;
    }
}
