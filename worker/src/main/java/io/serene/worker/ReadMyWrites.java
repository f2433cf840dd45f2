package io.serene.worker;

import io.serene.protocol.sync.LateMode;

import java.util.HashMap;
import java.util.Map;

/**
 * Read-my-writes bookkeeping (as in SSP, Ho et al. 2013): a worker computes on the model made of
 * every released aggregate it has applied plus its own contributions not released yet, scaled as
 * they will appear in an averaged aggregate (1 / workers). An own contribution leaves the pending
 * part exactly when an aggregate holding it is applied, so it is never counted twice; a chunk that
 * missed its round (late) stays pending until the round it was folded into is applied, or leaves
 * at once when late contributions are dropped.
 *
 * <p>Parameters are updated as {@code params -= learningRate * average}. Not thread-safe.
 */
public final class ReadMyWrites {
    private final int elements;
    private final int workers;
    private final int workerId;
    private final float learningRate;
    private final float[] pending;
    private final float[] carried;
    private final Map<Integer, float[]> byRound = new HashMap<>();
    private final float[] average;

    public ReadMyWrites(final int elements, final int workers, final int workerId, final float learningRate) {
        this.elements = elements;
        this.workers = workers;
        this.workerId = workerId;
        this.learningRate = learningRate;
        this.pending = new float[elements];
        this.carried = new float[elements];
        this.average = new float[elements];
    }

    /** Records this worker's gradient for a round as it hands it to {@link WorkerEngine#allreduce}. */
    public void contributed(final int round, final float[] gradient) {
        if (gradient.length != elements) {
            throw new IllegalArgumentException("gradient has " + gradient.length + " elements, expected " + elements);
        }
        if (byRound.containsKey(round)) {
            throw new IllegalArgumentException("round " + round + " was already contributed");
        }
        byRound.put(round, gradient.clone());
        for (int i = 0; i < elements; i++) {
            pending[i] += gradient[i];
        }
    }

    /**
     * Applies a released aggregate to the parameters (call in round order, once per round) and
     * retires the own contributions it holds. {@code late} is the late mode of the aggregate's round.
     */
    public void apply(final Aggregate aggregate, final float[] params, final LateMode late) {
        aggregate.averageInto(average);
        for (int i = 0; i < elements; i++) {
            params[i] -= learningRate * average[i];
        }
        final float[] own = byRound.remove(aggregate.round());
        final int k = aggregate.chunkElements();
        for (int c = 0; c < aggregate.chunks(); c++) {
            final boolean included = aggregate.chunkContributors(c).get(workerId);
            final int from = c * k;
            final int to = Math.min(elements, from + k);
            for (int i = from; i < to; i++) {
                final float mine = own == null ? 0f : own[i];
                if (included) {
                    // this chunk carries the round's own values and everything folded into it
                    pending[i] -= mine + carried[i];
                    carried[i] = 0f;
                } else if (late == LateMode.FOLD) {
                    carried[i] += mine;
                } else {
                    pending[i] -= mine + carried[i];
                    carried[i] = 0f;
                }
            }
        }
    }

    /** The model to compute on: {@code params} minus the scaled own contributions not yet released. */
    public void view(final float[] params, final float[] out) {
        final float scale = learningRate / workers;
        for (int i = 0; i < elements; i++) {
            out[i] = params[i] - scale * pending[i];
        }
    }

    /** The own contributions not yet in an applied aggregate (sum over rounds). */
    public float[] pending() {
        return pending.clone();
    }
}
