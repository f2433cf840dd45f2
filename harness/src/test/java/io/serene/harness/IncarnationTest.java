package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.protocol.JobKeys;
import io.serene.protocol.sync.SyncConfig;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerEngine;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A worker restarted while its old process was stopped: the new incarnation takes the worker's
 * place, and the old one, resumed, is refused FENCED when it joins again and stops saying why; the
 * job goes on with the new one.
 */
class IncarnationTest {
    private static final byte[] SECRET = "a secret of more than sixteen bytes".getBytes(StandardCharsets.UTF_8);
    private static final int JOB = 3;

    private final List<Throwable> errors = new ArrayList<>();
    private final ManualWire wire = new ManualWire();

    private WorkerEngine worker(final int id, final long incarnation) {
        final WorkerEngine engine = new WorkerEngine(new WorkerContext().jobId(JOB)
            .key(JobKeys.workerKey(JobKeys.jobSecret(SECRET, JOB), JOB, id)).workerId(id).workers(2)
            .elementsPerRound(8).switchPort(0).incarnation(incarnation).joinRetryNs(5_000_000).maxJoinAttempts(100), errors::add);
        wire.nodes.add(engine);
        return engine;
    }

    @Test
    void theOlderIncarnationOfARestartedWorkerIsFencedAndTheJobGoesOnWithTheNewOne() {
        wire.nodes.add(new SwitchPipeline(new SwitchContext().budgetBytes(1 << 20).maxJobs(1).maxWorkers(4).chunkElements(4)
            .defaultSync(SyncConfig.bsp()).secret(SECRET).conclude(), errors::add));
        final WorkerEngine zero = worker(0, 1);
        final WorkerEngine old = worker(1, 100);
        assertThat(wire.runUntil(() -> zero.joined().isDone() && old.joined().isDone(), 10_000)).isTrue();
        // worker 1 restarted (a later incarnation, another address) while the old process is stopped
        final WorkerEngine restarted = worker(1, 200);
        assertThat(wire.runUntil(() -> restarted.joined().isDone(), 10_000)).isTrue();
        assertThat(restarted.joined()).isNotCompletedExceptionally();
        // the old process resumes and joins again (as one that lost its job would): fenced
        final WorkerEngine resumed = worker(1, 100);
        assertThat(wire.runUntil(() -> resumed.joined().isDone(), 10_000)).isTrue();
        assertThat(resumed.joined()).isCompletedExceptionally();
        assertThat(resumed.joined().handle((v, ex) -> ex.getMessage()).join()).contains("FENCED", "a newer incarnation of this worker");
        // the job goes on with worker 0 and the new worker 1
        final CompletableFuture<Aggregate> a = zero.allreduce(0, new float[] {1, 1, 1, 1, 1, 1, 1, 1});
        final CompletableFuture<Aggregate> b = restarted.allreduce(0, new float[] {2, 2, 2, 2, 2, 2, 2, 2});
        assertThat(wire.runUntil(() -> a.isDone() && b.isDone(), 10_000)).isTrue();
        assertThat(a.join().sum()[0]).isEqualTo(3f);
        assertThat(b.join().contributorCount()).isEqualTo(2);
        assertThat(errors).isEmpty();
    }
}
