package io.serene.training;

import java.io.IOException;
import java.util.Locale;
import java.util.concurrent.ExecutionException;

/**
 * A training worker's test-set evaluations, every {@code --eval-every} rounds and at the last:
 * during training (inside the measured times), or deferred, the model copied at each such round
 * and every copy evaluated after training, here alone or shared with the run's other workers
 * ({@link EvaluationShare}). Accuracies are recorded in the round records at the time the worker
 * held the model.
 */
final class Evaluations {
    /** A shared evaluation not published within this many times this worker's slowest evaluation is made here. */
    private static final long SHARE_PATIENCE_EVALUATIONS = 10;
    /** ... and never sooner than this (a worker that evaluated nothing itself has no time to go by). */
    private static final long SHARE_PATIENCE_MIN_MS = 60_000;

    private final DjlModel net;
    private final RoundRecords log;
    /** The copies evaluated after training; null: evaluation during training. */
    private final ModelCopies copies;
    private final float[] testPixels;
    private final int[] testLabels;
    private final int total;
    private final int workers;
    private final LoopOptions options;

    Evaluations(final DjlModel net, final RoundRecords log, final ModelCopies copies, final float[] testPixels, final int[] testLabels,
                final int total, final int workers, final LoopOptions options) {
        this.net = net;
        this.log = log;
        this.copies = copies;
        this.testPixels = testPixels;
        this.testLabels = testLabels;
        this.total = total;
        this.workers = workers;
        this.options = options;
    }

    /** Whether evaluation is deferred to copies evaluated after training. */
    boolean deferred() {
        return copies != null;
    }

    /** Whether the model is evaluated at {@code round}: every --eval-every rounds, and at the last. */
    boolean at(final int round) {
        return round == total - 1 || (options.settings().evalEvery() > 0 && (round + 1) % options.settings().evalEvery() == 0);
    }

    /** Whether a round's record waits for its accuracy until after training. */
    boolean recordWaits(final int round) {
        return copies != null && at(round);
    }

    /** After round {@code round} of the training loop (not the last): the model copied, or evaluated now, if it is due; whether it evaluated now. */
    boolean afterRound(final int round) {
        if (!at(round) || round + 1 >= total) {
            return false;
        }
        if (copies != null) {
            copies.take(net, round, log.clockNs());
            return false;
        }
        print(round, net.lastLoss(), now(round));
        return true;
    }

    /** After the last round's aggregate is applied: evaluated now unless evaluation is deferred. */
    void afterLastApplied(final int round) {
        if (copies == null && round == total - 1) {
            now(round);
        }
    }

    /**
     * Deferred evaluation, after training (once told to, if the options say so): the final model
     * first, then each copy; then the records of the evaluated rounds (the others were written as
     * their rounds were applied). An accuracy is stamped with the time the worker held the model.
     */
    void afterTraining(final long endNs) throws InterruptedException, IOException {
        if (copies == null) {
            return;
        }
        if (options.toldToEvaluate() != null) {
            System.out.println("@trained");
            System.out.flush();
            try {
                options.toldToEvaluate().get();
            } catch (final ExecutionException ex) {
                throw new IllegalStateException(ex.getCause());
            }
        }
        if (options.evaluationShare() == null) {
            held(total - 1, endNs);
            for (int i = 0; i < copies.size(); i++) {
                net.loadParameters(copies.parameters(i));
                final int round = copies.round(i);
                final double accuracy = held(round, copies.takenNs(i));
                print(round, copies.loss(i), accuracy);
            }
        } else {
            shared(new EvaluationShare(options.evaluationShare()), endNs);
        }
        for (int round = 0; round < total; round++) {
            if (at(round)) {
                log.write(round);
            }
        }
    }

    /**
     * Deferred evaluation shared with the run's other workers ({@link EvaluationShare}): the final
     * model and every copy, each evaluated here if this worker claims it first (each worker starts
     * at another place in the list, so the claims spread), else read from the worker that did; one
     * not published within {@link #SHARE_PATIENCE_EVALUATIONS} times this worker's slowest
     * evaluation (at least {@link #SHARE_PATIENCE_MIN_MS}) is evaluated here after all.
     */
    private void shared(final EvaluationShare share, final long endNs) throws InterruptedException {
        final int n = copies.size() + 1;
        // [0] the final model, [i] copy i - 1
        final float[][] models = new float[n][];
        final int[] rounds = new int[n];
        models[0] = new float[net.elements()];
        net.copyParameters(models[0]);
        rounds[0] = total - 1;
        final String[] keys = new String[n];
        final double[] accuracy = new double[n];
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                models[i] = copies.parameters(i - 1);
                rounds[i] = copies.round(i - 1);
            }
            keys[i] = EvaluationShare.key(rounds[i], models[i]);
            accuracy[i] = Double.NaN;
        }
        long slowestMs = 0;
        final int from = (int) ((long) options.id() * n / workers);
        for (int k = 0; k < n; k++) {
            final int i = (from + k) % n;
            if (share.claim(keys[i])) {
                final long t0 = System.nanoTime();
                net.loadParameters(models[i]);
                accuracy[i] = score();
                share.publish(keys[i], accuracy[i]);
                slowestMs = Math.max(slowestMs, (System.nanoTime() - t0) / 1_000_000);
            }
        }
        final long patienceMs = Math.max(SHARE_PATIENCE_MIN_MS, SHARE_PATIENCE_EVALUATIONS * slowestMs);
        for (int i = 0; i < n; i++) {
            if (Double.isNaN(accuracy[i])) {
                accuracy[i] = share.await(keys[i], patienceMs);
            }
            if (Double.isNaN(accuracy[i])) {
                System.out.printf(Locale.ROOT, "worker %d: the accuracy of round %d was not shared within %d ms: evaluating it here%n",
                    options.id(), rounds[i] + 1, patienceMs);
                net.loadParameters(models[i]);
                accuracy[i] = score();
            }
        }
        log.evaluated(total - 1, accuracy[0], endNs);
        for (int i = 1; i < n; i++) {
            log.evaluated(copies.round(i - 1), accuracy[i], copies.takenNs(i - 1));
            print(copies.round(i - 1), copies.loss(i - 1), accuracy[i]);
        }
    }

    private void print(final int round, final float loss, final double accuracy) {
        System.out.printf(Locale.ROOT, "worker %d round %d loss %.4f accuracy %.4f%n", options.id(), round + 1, loss, accuracy);
        System.out.flush();
    }

    /** Test accuracy of the model now, recorded for the round at the time it was evaluated. */
    private double now(final int round) {
        final double accuracy = score();
        log.evaluated(round, accuracy, log.clockNs());
        return accuracy;
    }

    /** Test accuracy of the model, recorded for the round at {@code heldNs} (when the worker held this model). */
    private double held(final int round, final long heldNs) {
        final double accuracy = score();
        log.evaluated(round, accuracy, heldNs);
        return accuracy;
    }

    /** Test accuracy of the model; the time it took counts as evaluation. */
    private double score() {
        final long t0 = log.clockNs();
        final double accuracy = net.accuracy(testPixels, testLabels);
        log.evaluating(log.clockNs() - t0);
        return accuracy;
    }
}
