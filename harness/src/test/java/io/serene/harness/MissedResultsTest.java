package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.Flags;
import io.serene.protocol.PacketType;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerEngine;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker that misses the results of a round released without it (they came while it was still
 * joining, or were lost) takes the round only once it holds all of them: its exponents too, or it
 * would read the sums at the wrong scale and its model would leave the others' (docs/design.md invariant 3).
 */
class MissedResultsTest {
    private static final int WORKERS = 3;
    private static final int ELEMENTS = 10;

    @Test
    void aWorkerTakesARoundReleasedWithoutItOnlyOnceItHoldsItsExponents() {
        final List<Throwable> errors = new ArrayList<>();
        final boolean[] dropping = {true};
        // worker 0 (address 1) loses every exponent result of round 0 multicast to it
        final ManualWire wire = new ManualWire();
        wire.drop = (to, h) -> dropping[0] && to == 1 && h.type() == PacketType.RESULT
            && (h.flags() & Flags.EXPONENTS) != 0 && h.round() == 0;
        wire.nodes.add(new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(1).maxWorkers(4).chunkElements(4)
            .maxPoolSize(4).roundRing(8).defaultSync(SyncConfigParser.parse("fastest:2+drop")).conclude(), errors::add));
        final List<WorkerEngine> workers = new ArrayList<>();
        for (int w = 0; w < WORKERS; w++) {
            final WorkerEngine engine = new WorkerEngine(new WorkerContext().jobId(1).workerId(w).workers(WORKERS)
                .elementsPerRound(ELEMENTS).switchPort(0).initialRtoNs(5_000_000).minRtoNs(2_000_000).joinRetryNs(5_000_000)
                .maxJoinAttempts(100), errors::add);
            workers.add(engine);
            wire.nodes.add(engine);
        }
        assertThat(wire.runUntil(() -> workers.stream().allMatch(e -> e.joined().isDone()), 10_000)).isTrue();
        // workers 1 and 2 release round 0 by themselves; worker 0 gets its sums, not its exponents
        final List<CompletableFuture<Aggregate>> others = new ArrayList<>();
        for (int w = 1; w < WORKERS; w++) {
            final float[] g = new float[ELEMENTS];
            for (int i = 0; i < ELEMENTS; i++) {
                g[i] = (w + 1) * (i - 4.5f) * 1e-3f;
            }
            others.add(workers.get(w).allreduce(0, g));
        }
        assertThat(wire.runUntil(() -> others.stream().allMatch(CompletableFuture::isDone), 10_000)).isTrue();
        // worker 0 skips the round: it has every chunk's sums but not the exponents to read them at
        final CompletableFuture<Aggregate> late = workers.get(0).skip(0, 0);
        wire.runUntil(late::isDone, 10_000);
        assertThat(late).as("no round without its exponents").isNotDone();
        // asked again (its exponent step), the switch answers with the released result
        dropping[0] = false;
        assertThat(wire.runUntil(late::isDone, 10_000)).isTrue();
        final float[] mine = new float[ELEMENTS];
        final float[] theirs = new float[ELEMENTS];
        late.join().averageInto(mine);
        others.get(0).join().averageInto(theirs);
        assertThat(mine).as("the same aggregate, bitwise").isEqualTo(theirs);
        assertThat(late.join().integerSums()).isEqualTo(others.get(0).join().integerSums());
        assertThat(errors).isEmpty();
    }
}
