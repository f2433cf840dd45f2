package io.serene.training;

/**
 * The model a worker computes a round on when it computes ahead of its pending rounds
 * ({@link ComputeOn}), built into a reused array: the model after those rounds' steps, each with
 * its momentum and learning rate and the velocity carried on; this worker's unreleased gradients,
 * scaled by 1 / N as they appear in an average, in the first of them; under
 * {@link ComputeOn#PREDICTED} the others' part of each predicted as the last applied average. Also
 * delay compensation's correction between two such models.
 */
final class AheadModel {
    private final DjlModel net;
    private final TrainSettings settings;
    private final float workers;
    private final float[] model;
    private final float[] own;
    private final float[] others;
    /** Delay compensation: the model a gradient was computed on, kept before the next one is built. */
    private float[] kept;

    AheadModel(final DjlModel net, final TrainSettings settings, final int workers) {
        this.net = net;
        this.settings = settings;
        this.workers = workers;
        model = new float[net.elements()];
        own = new float[net.elements()];
        others = new float[net.elements()];
    }

    /** The model last built (or set by {@link #toApplied}). */
    float[] model() {
        return model;
    }

    /**
     * Whether round {@code round} is computed ahead of pending rounds (after {@code applied} rounds,
     * so {@code round - applied} of them, never under BSP), and if so builds the model it is computed
     * on from the rounds' {@code bounds}, this worker's {@code unreleased} gradients (their sum) and
     * the {@code lastAverage} applied.
     */
    boolean build(final int round, final int applied, final int[] bounds, final float[] unreleased, final float[] lastAverage) {
        final int pendingRounds = round - applied;
        final ComputeOn on = settings.computeOn();
        if (on == ComputeOn.APPLIED || pendingRounds <= 0) {
            return false;
        }
        final float[] momenta = new float[pendingRounds];
        for (int j = 0; j < pendingRounds; j++) {
            momenta[j] = settings.momentumRule().momentum(net.momentum(), bounds[applied + j]);
        }
        for (int i = 0; i < own.length; i++) {
            own[i] = unreleased[i] / workers;
        }
        if (on == ComputeOn.PREDICTED) {
            final float share = (workers - 1) / workers;
            for (int i = 0; i < others.length; i++) {
                others[i] = share * lastAverage[i];
            }
        }
        net.predictInto(model, own, on == ComputeOn.PREDICTED ? others : null, momenta);
        return true;
    }

    /** The model as applied, for when nothing is pending any more. */
    void toApplied() {
        net.copyParameters(model);
    }

    /** Keeps the model last built: the one a gradient was computed on, for {@link #compensate}. */
    void keep() {
        if (kept == null) {
            kept = new float[model.length];
        }
        System.arraycopy(model, 0, kept, 0, model.length);
    }

    /**
     * DC-ASGD's first-order correction of {@code gradient}, computed on the kept model, towards the
     * model built since: g + lambda g g (now - then), element by element (the Hessian approximated by
     * the diagonal of the gradient's outer product).
     */
    void compensate(final float[] gradient, final float lambda) {
        for (int i = 0; i < gradient.length; i++) {
            final float g = gradient[i];
            gradient[i] = g + lambda * g * g * (model[i] - kept[i]);
        }
    }
}
