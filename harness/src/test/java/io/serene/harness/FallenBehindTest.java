package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerEngine;
import io.serene.worker.WorkerCounter;
import io.serene.worker.WorkerException;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker cut off while its job goes on without it (a quorum barrier) past twice the pool's steps
 * finds its round's results gone from the switch: the switch answers its steps NACK STALE, and the
 * worker fails its round at once, saying why, instead of resending until its timeout runs out. A
 * STALE answer to a step whose result is still on its way does not fail it.
 */
class FallenBehindTest {
    private static final int WORKERS = 3;
    private static final int ELEMENTS = 10;
    private static final int SWITCH = 0;

    private final List<Throwable> errors = new ArrayList<>();
    private final ManualWire wire = new ManualWire();
    private final List<WorkerEngine> workers = new ArrayList<>();

    /** A switch with 4 slots a set (8 steps of memory) releasing each step with 2 of 3 workers, and 3 joined workers. */
    private void start() {
        wire.nodes.add(new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(1).maxWorkers(4).chunkElements(4)
            .maxPoolSize(4).roundRing(8).defaultSync(SyncConfigParser.parse("fastest:2+drop")).conclude(), errors::add));
        for (int w = 0; w < WORKERS; w++) {
            final WorkerEngine engine = new WorkerEngine(new WorkerContext().jobId(1).workerId(w).workers(WORKERS)
                .elementsPerRound(ELEMENTS).switchPort(SWITCH).initialRtoNs(5_000_000).minRtoNs(2_000_000).maxRtoNs(100_000_000).joinRetryNs(5_000_000)
                .maxJoinAttempts(100), errors::add);
            workers.add(engine);
            wire.nodes.add(engine);
        }
        assertThat(wire.runUntil(() -> workers.stream().allMatch(e -> e.joined().isDone()), 10_000)).isTrue();
    }

    private static float[] gradient(final int w, final int round) {
        final float[] g = new float[ELEMENTS];
        for (int i = 0; i < ELEMENTS; i++) {
            g[i] = (w + 1) * (i - 4.5f + round) * 1e-3f;
        }
        return g;
    }

    @Test
    void aWorkerWhoseRoundsResultsAreGoneFromTheSwitchFailsSayingSoInsteadOfWaitingOutItsTimeout() {
        start();
        // worker 0 (address 1) submits round 0 and is cut off before any of it reaches the switch
        wire.cut = (source, to) -> source == 1 || to == 1;
        final CompletableFuture<Aggregate> behind = workers.get(0).allreduce(0, gradient(0, 0));
        // workers 1 and 2 go on without it, six rounds: more than twice the switch's 4 slots a set of steps
        for (int round = 0; round < 6; round++) {
            final List<CompletableFuture<Aggregate>> others = new ArrayList<>();
            for (int w = 1; w < WORKERS; w++) {
                others.add(workers.get(w).allreduce(round, gradient(w, round)));
            }
            assertThat(wire.runUntil(() -> others.stream().allMatch(CompletableFuture::isDone), 10_000)).isTrue();
            others.forEach(f -> f.join().release());
        }
        // back: its steps are answered STALE; once the longest timeout (100 ms here) passed without their results, it fails, naming why
        wire.cut = (source, to) -> false;
        final long back = wire.nowNs;
        assertThat(wire.runUntil(behind::isDone, 10_000)).as("the round ends").isTrue();
        assertThat(behind).isCompletedExceptionally();
        assertThat(behind.handle((a, ex) -> ex.getCause() != null ? ex.getCause() : ex).join())
            .isInstanceOf(WorkerException.class)
            .hasMessageContaining("worker 0 fell too far behind job 1")
            .hasMessageContaining("NACK STALE")
            .hasMessageContaining("join again from the workers' checkpoints")
            .matches(ex -> ((WorkerException) ex).lost() == WorkerException.Lost.PLACE, "its place lost: a caller with checkpoints "
                + "may join again");
        assertThat(wire.nowNs - back).as("about the longest timeout, not the caller's timeout").isLessThan(300_000_000L);
        assertThat(errors).isEmpty();
    }

    @Test
    void aStaleAnswerToAStepWhoseResultIsStillComingDoesNotFailTheRound() {
        start();
        final List<CompletableFuture<Aggregate>> rounds = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            rounds.add(workers.get(w).allreduce(0, gradient(w, 0)));
        }
        // the switch's first step of worker 0's taken, a STALE answer to it overtakes its result, which comes 30 ms later
        // (within the longest timeout, 100 ms here): the round completes all the same
        final PacketHeader seen = new PacketHeader();
        final boolean[] forged = {false};
        wire.tap = (source, packet) -> {
            seen.wrap(packet, 0, packet.capacity());
            if (!forged[0] && source == 1 && seen.type() == PacketType.DATA) {
                forged[0] = true;
                final ByteBuffer nack = Packet.allocate(Packet.HEADER_LENGTH);
                new PacketHeader().wrap(nack, 0, Packet.HEADER_LENGTH).initHeader(PacketType.NACK).jobId(1).workerId(0)
                    .seq(seen.seq()).round(seen.round()).status(Status.STALE.code());
                wire.inject(SWITCH, 1, nack);
                wire.hold(1, wire.nowNs + 30_000_000);
            }
        };
        assertThat(wire.runUntil(() -> rounds.stream().allMatch(CompletableFuture::isDone), 10_000)).isTrue();
        assertThat(forged[0]).isTrue();
        assertThat(workers.get(0).counters().get(WorkerCounter.NACKS)).as("the forged STALE reached it").isEqualTo(1);
        assertThat(rounds.get(0)).isCompleted();
        assertThat(rounds.get(0).join().integerSums()).isEqualTo(rounds.get(1).join().integerSums());
        // and well past the grace, nothing fails
        final CompletableFuture<Aggregate> next = workers.get(0).allreduce(1, gradient(0, 1));
        for (int w = 1; w < WORKERS; w++) {
            workers.get(w).allreduce(1, gradient(w, 1));
        }
        assertThat(wire.runUntil(next::isDone, 10_000)).isTrue();
        assertThat(next).isCompleted();
        assertThat(errors).isEmpty();
    }
}
