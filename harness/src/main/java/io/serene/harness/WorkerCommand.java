package io.serene.harness;

import io.serene.training.DjlModel;
import io.serene.training.ModelKind;
import io.serene.transport.UdpOptions;
import io.serene.transport.UdpTransport;
import io.serene.worker.Aggregate;
import io.serene.worker.UdpWorker;
import io.serene.worker.WorkerContext;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * {@code serene worker}: one training worker (one JVM: PyTorch allows one gradient collector per
 * process). Each round: a batch of its seeded shard, forward and backward, the flat gradient
 * through the switch, the aggregate averaged by contributor count back into the model, SGD with
 * momentum. Under a bound s the worker computes round r once round r - 1 - s is released and
 * its aggregate applied, applying every later aggregate that has already arrived first (under BSP:
 * exactly round r - 1's, so every worker steps through the same models).
 */
@Command(name = "worker", mixinStandardHelpOptions = true,
    description = "Runs one training worker against a switch (serene switch) on Fashion-MNIST.")
public final class WorkerCommand implements Callable<Integer> {
    @Option(names = "--switch", defaultValue = "127.0.0.1:7000", description = "The switch's UDP address HOST:PORT. Default: ${DEFAULT-VALUE}.")
    String switchAddress;

    @Option(names = "--job", defaultValue = "1", description = "Job id. Default: ${DEFAULT-VALUE}.")
    int job;

    @Option(names = "--id", required = true, description = "This worker's id, 0..N-1.")
    int id;

    @Option(names = "--workers", required = true, description = "Workers in the job (N).")
    int workers;

    @Option(names = "--model", defaultValue = "mlp", description = "mlp or cnn. Default: ${DEFAULT-VALUE}.")
    String model;

    @Option(names = "--rounds", defaultValue = "200", description = "Rounds (one batch each). Default: ${DEFAULT-VALUE}.")
    int rounds;

    @Option(names = "--batch", defaultValue = "64", description = "Batch size. Default: ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--lr", defaultValue = "0.05", description = "Learning rate. Default: ${DEFAULT-VALUE}.")
    float learningRate;

    @Option(names = "--momentum", defaultValue = "0.9", description = "SGD momentum. Default: ${DEFAULT-VALUE}.")
    float momentum;

    @Option(names = "--eval-every", defaultValue = "50", description = "Evaluate on the test set every E rounds (0: only at the end). Default: ${DEFAULT-VALUE}.")
    int evalEvery;

    @Option(names = "--data", description = "Directory with the four Fashion-MNIST .gz files. Default: " + "/usr/share/datasets/fashion-mnist")
    Path data;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of the model, the shards and the batches. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--stragglers", defaultValue = "none", description = "Straggler profile, as in serene sim "
        + "(none | persistent:W:xF | transient:p=P,xF | heavytail:alpha=A | classes:A-B=xF,... | trace:FILE): this worker "
        + "sleeps (F - 1) times its measured compute time after each gradient. Default: ${DEFAULT-VALUE}.")
    String stragglers;

    @Option(names = "--timeout-seconds", defaultValue = "60", description = "Give up if the switch does not answer a round for this long. Default: ${DEFAULT-VALUE}.")
    int timeoutSeconds;

    @Override
    public Integer call() throws Exception {
        final ModelKind kind = ModelKind.parse(model);
        if (workers <= 0 || id < 0 || id >= workers) {
            throw new IllegalArgumentException("--id must be in 0.." + (workers - 1) + " and --workers positive, were " + id + " and " + workers);
        }
        if (rounds <= 0 || batch <= 0 || evalEvery < 0) {
            throw new IllegalArgumentException("--rounds and --batch must be positive and --eval-every >= 0");
        }
        final StragglerProfile profile = StragglerProfile.parse(stragglers, seed);
        final InetSocketAddress parsed = Addresses.parse("--switch", switchAddress);
        final InetSocketAddress target = new InetSocketAddress(parsed.getHostString(), parsed.getPort());
        final FashionMnist dataset = FashionMnist.load(data != null ? data : FashionMnist.DEBIAN_DIR);
        final int[] shard = dataset.train.shard(id, workers, seed);
        final float[] testPixels = new float[dataset.test.size() * DjlModel.PIXELS];
        final int[] testLabels = new int[dataset.test.size()];
        for (int i = 0; i < testLabels.length; i++) {
            dataset.test.image(i, testPixels, i * DjlModel.PIXELS);
            testLabels[i] = dataset.test.label(i);
        }
        final float[] pixels = new float[batch * DjlModel.PIXELS];
        final int[] labels = new int[batch];
        final SplittableRandom order = new SplittableRandom(seed * 31 + id);
        try (DjlModel net = new DjlModel(kind, batch, learningRate, momentum, seed);
             UdpTransport transport = UdpTransport.create(1, true)) {
            final float[] averaged = new float[net.elements()];
            final UdpWorker worker = UdpWorker.start(new WorkerContext().jobId(job).workerId(id).workers(workers)
                .elementsPerRound(net.elements()), target, new InetSocketAddress(0), transport, UdpOptions.defaults(),
                ex -> System.err.println("worker " + id + " error: " + ex));
            try {
                await(worker.joined(), "join job " + job + " at " + switchAddress);
                System.out.println("worker " + id + "/" + workers + ": " + kind + " with " + net.elements() + " parameters, shard of "
                    + shard.length + " images, seed " + seed);
                final long start = System.nanoTime();
                long computeNs = 0;
                long injectedNs = 0;
                final java.util.ArrayDeque<java.util.concurrent.CompletableFuture<Aggregate>> pending = new java.util.ArrayDeque<>();
                int nextToApply = 0;
                for (int round = 0; round < rounds; round++) {
                    await(worker.awaitClearance(round), "clearance for round " + round);
                    final int r = round;
                    final int bound = await(worker.call(e -> e.boundFor(r)), "the bound of round " + round);
                    // required: every round up to r - 1 - s; then whatever else already arrived
                    while (!pending.isEmpty() && ((long) nextToApply <= (long) round - 1 - bound || pending.peek().isDone())) {
                        applyNext(pending, nextToApply++, net, averaged);
                    }
                    final long t0 = System.nanoTime();
                    for (int b = 0; b < batch; b++) {
                        final int i = shard[order.nextInt(shard.length)];
                        dataset.train.image(i, pixels, b * DjlModel.PIXELS);
                        labels[b] = dataset.train.label(i);
                    }
                    final float[] gradient = net.computeGradient(pixels, labels);
                    final long measured = System.nanoTime() - t0;
                    final long extra = (long) ((profile.factor(id, round) - 1) * measured);
                    if (extra > 0) {
                        java.util.concurrent.locks.LockSupport.parkNanos(extra);
                        injectedNs += extra;
                    }
                    computeNs += measured;
                    // a copy: the model reuses its gradient buffer, and the engine reads it while sending
                    pending.add(worker.allreduce(round, gradient.clone()));
                    if (evalEvery > 0 && (round + 1) % evalEvery == 0 && round + 1 < rounds) {
                        System.out.printf(Locale.ROOT, "worker %d round %d loss %.4f accuracy %.4f%n", id, round + 1, net.lastLoss(),
                            net.accuracy(testPixels, testLabels));
                        System.out.flush();
                    }
                }
                while (!pending.isEmpty()) {
                    applyNext(pending, nextToApply++, net, averaged);
                }
                final double seconds = (System.nanoTime() - start) / 1e9;
                final double accuracy = net.accuracy(testPixels, testLabels);
                System.out.printf(Locale.ROOT, "worker %d done: %d rounds in %.2f s (compute %.2f s, injected straggling %.2f s), "
                    + "loss %.4f, accuracy %.4f, model %s%n", id, rounds, seconds, computeNs / 1e9, injectedNs / 1e9, net.lastLoss(),
                    accuracy, net.hash());
                final java.util.Map<String, Object> json = new java.util.LinkedHashMap<>();
                json.put("worker", id);
                json.put("rounds", rounds);
                json.put("seconds", seconds);
                json.put("computeSeconds", computeNs / 1e9);
                json.put("injectedSeconds", injectedNs / 1e9);
                json.put("stragglers", profile.toString());
                json.put("finalAccuracy", accuracy);
                json.put("modelHash", net.hash());
                json.put("seed", seed);
                System.out.println(Json.write(json));
            } finally {
                worker.close();
            }
        }
        return 0;
    }

    /** Waits for the oldest pending aggregate (round {@code round}) and steps the model with its average. */
    private void applyNext(final java.util.Queue<java.util.concurrent.CompletableFuture<Aggregate>> pending, final int round,
                           final DjlModel net, final float[] averaged) throws InterruptedException {
        final Aggregate aggregate = await(pending.poll(), "the aggregate of round " + round);
        aggregate.averageInto(averaged);
        aggregate.release();
        net.applyGradient(averaged);
    }

    private <T> T await(final java.util.concurrent.CompletableFuture<T> future, final String what) throws InterruptedException {
        try {
            return future.get(timeoutSeconds, TimeUnit.SECONDS);
        } catch (final TimeoutException ex) {
            throw new IllegalStateException("worker " + id + ": no " + what + " within " + timeoutSeconds + " s (is the switch at "
                + switchAddress + " running?)");
        } catch (final ExecutionException ex) {
            throw new IllegalStateException("worker " + id + ": " + what + " failed: " + ex.getCause().getMessage());
        }
    }
}
