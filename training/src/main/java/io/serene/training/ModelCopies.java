package io.serene.training;

import java.util.Locale;

/**
 * Copies of a worker's model taken at its evaluation rounds, with the time and the loss, for
 * evaluating on the test set after training (deferred evaluation): a copy costs a memory copy of
 * the parameters where an evaluation costs a forward pass over 10,000 images. The copies' arrays
 * are allocated up front (reading the parameters out of PyTorch still makes a temporary array per
 * parameter tensor, once every evaluation round).
 */
public final class ModelCopies {
    /** Model copies for deferred evaluation at most take this much heap (the workers run with -Xmx512m). */
    public static final long COPY_BUDGET_BYTES = 192L << 20;

    private final float[][] parameters;
    private final int[] rounds;
    private final long[] takenNs;
    private final float[] losses;
    private int size;

    private ModelCopies(final int count, final int elements) {
        parameters = new float[count][elements];
        rounds = new int[count];
        takenNs = new long[count];
        losses = new float[count];
    }

    /**
     * Room for every evaluation round of a run (round r with r + 1 a multiple of {@code every},
     * before the last round, which the worker evaluates from its final model).
     *
     * @throws IllegalArgumentException if the copies would take more than {@link #COPY_BUDGET_BYTES}
     */
    public static ModelCopies forRun(final int rounds, final int every, final int elements) {
        final int count = every <= 0 ? 0 : (rounds - 1) / every;
        final long bytes = 4L * count * elements;
        if (bytes > COPY_BUDGET_BYTES) {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "deferred evaluation would keep %d copies "
                + "of the model (%d MiB, more than %d MiB): raise --eval-every or evaluate during training (--no-deferred-eval)",
                count, bytes >> 20, COPY_BUDGET_BYTES >> 20));
        }
        return new ModelCopies(count, elements);
    }

    /** Copies the model as it is at {@code round}, with the time (on the run's clock) and its last loss. */
    public void take(final DjlModel net, final int round, final long atNs) {
        if (size == parameters.length) {
            throw new IllegalStateException("more evaluation rounds than the " + parameters.length + " copies made room for");
        }
        net.copyParameters(parameters[size]);
        rounds[size] = round;
        takenNs[size] = atNs;
        losses[size] = net.lastLoss();
        size++;
    }

    /** Adds a copy taken earlier (by the process a checkpoint came from). */
    public void add(final float[] copy, final int round, final long atNs, final float loss) {
        if (size == parameters.length) {
            throw new IllegalStateException("more evaluation rounds than the " + parameters.length + " copies made room for");
        }
        System.arraycopy(copy, 0, parameters[size], 0, parameters[size].length);
        rounds[size] = round;
        takenNs[size] = atNs;
        losses[size] = loss;
        size++;
    }

    /** Forgets the copies of rounds from {@code roundsDone} on (taken in round order): the job goes on after that many rounds again. */
    public void truncate(final int roundsDone) {
        while (size > 0 && rounds[size - 1] >= roundsDone) {
            size--;
        }
    }

    /** Copies there is room for. */
    int capacity() {
        return parameters.length;
    }

    public int size() {
        return size;
    }

    public float[] parameters(final int i) {
        return parameters[i];
    }

    public int round(final int i) {
        return rounds[i];
    }

    public long takenNs(final int i) {
        return takenNs[i];
    }

    public float loss(final int i) {
        return losses[i];
    }
}
