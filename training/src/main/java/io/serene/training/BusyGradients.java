package io.serene.training;

/**
 * WBSP: the gradients a worker computed while it waited for a round's clearance, each weighed as
 * {@link StaleScale} weighs it, until they go out with the round's own gradient as one weighted
 * mean ({@link #mergeInto}). Their images and times join the round's record there.
 */
final class BusyGradients {
    private final float[] sum;
    private int count;
    private float weight;
    private int images;
    private long computeNs;
    private long injectedNs;
    private long hostNs;

    BusyGradients(final int elements) {
        sum = new float[elements];
    }

    /** One more gradient (already weighed by {@code w}), of {@code batch} images, computed in the given times. */
    void add(final float[] gradient, final float w, final int batch, final long elapsedNs, final long extraNs, final long realNs) {
        for (int i = 0; i < gradient.length; i++) {
            sum[i] = count == 0 ? gradient[i] : sum[i] + gradient[i];
        }
        count++;
        weight += w;
        images += batch;
        computeNs += elapsedNs;
        injectedNs += extraNs;
        hostNs += realNs;
    }

    /**
     * Makes {@code gradient} (the round's own, weighed by {@code ownWeight}) the weighted mean of it
     * and the gradients held, in place, records them with the round and forgets them; nothing held:
     * nothing changes.
     */
    void mergeInto(final float[] gradient, final float ownWeight, final RoundRecords log, final int round) {
        if (count == 0) {
            return;
        }
        final float share = 1f / (ownWeight + weight);
        for (int i = 0; i < gradient.length; i++) {
            gradient[i] = (gradient[i] + sum[i]) * share;
        }
        log.alsoComputed(round, images, computeNs, injectedNs, hostNs);
        clear();
    }

    /** Forgets the gradients held (their round went without this worker, or the worker went back to a snapshot). */
    void clear() {
        count = 0;
        weight = 0;
        images = 0;
        computeNs = 0;
        injectedNs = 0;
        hostNs = 0;
    }
}
