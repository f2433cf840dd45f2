package io.serene.harness;

import io.serene.dataplane.SwitchContext;
import io.serene.dataplane.SwitchPipeline;
import io.serene.transport.FaultInjector;
import io.serene.transport.InProcessNetwork;
import io.serene.worker.Aggregate;
import io.serene.worker.WorkerContext;
import io.serene.worker.WorkerEngine;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * A switch and N worker engines on one deterministic {@link InProcessNetwork}: the same engines
 * as over UDP, driven in virtual time. Used by tests, property tests and the simulator.
 */
public final class InProcessCluster {
    private final InProcessNetwork network;
    private final SwitchPipeline pipeline;
    private final List<WorkerEngine> workers = new ArrayList<>();
    private final int[] workerAddress;
    private final List<Throwable> errors = new ArrayList<>();

    public InProcessCluster(final SwitchContext switchContext, final int workerCount, final int elementsPerRound,
                            final FaultInjector faults, final long latencyNs, final long jitterNs) {
        final Consumer<Throwable> onError = errors::add;
        network = new InProcessNetwork(faults, latencyNs, jitterNs, 20 * latencyNs);
        pipeline = new SwitchPipeline(switchContext.conclude(), onError);
        final int switchAddress = network.attach(pipeline);
        workerAddress = new int[workerCount];
        for (int w = 0; w < workerCount; w++) {
            final WorkerEngine engine = new WorkerEngine(new WorkerContext()
                .jobId(1)
                .workerId(w)
                .workers(workerCount)
                .elementsPerRound(elementsPerRound)
                .switchPort(switchAddress)
                .initialRtoNs(10 * latencyNs + 1)
                .minRtoNs(4 * latencyNs + 1)
                .maxRtoNs(1000 * latencyNs + 1)
                .joinRetryNs(10 * latencyNs + 1)
                .maxJoinAttempts(1000), onError);
            workers.add(engine);
            workerAddress[w] = network.attach(engine);
        }
    }

    public InProcessNetwork network() {
        return network;
    }

    public SwitchPipeline pipeline() {
        return pipeline;
    }

    public WorkerEngine worker(final int w) {
        return workers.get(w);
    }

    public int workerCount() {
        return workers.size();
    }

    /** Errors handed to the error handlers (none in a correct run). */
    public List<Throwable> errors() {
        return errors;
    }

    /** Submits one round for every worker and returns the futures, one per worker. */
    public List<CompletableFuture<Aggregate>> submit(final int round, final float[][] gradients) {
        final List<CompletableFuture<Aggregate>> futures = new ArrayList<>();
        for (int w = 0; w < workers.size(); w++) {
            futures.add(workers.get(w).allreduce(round, gradients[w]));
            network.wake(workerAddress[w]);
        }
        return futures;
    }

    /** Runs the network until every future is done or virtual time passes the limit; true if all done. */
    public boolean runUntilDone(final List<? extends CompletableFuture<?>> futures, final long limitNs) {
        return network.runUntil(() -> futures.stream().allMatch(CompletableFuture::isDone), limitNs);
    }
}
