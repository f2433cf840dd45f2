package io.serene.training;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Blocks;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.convolutional.Conv2d;
import ai.djl.nn.core.Linear;
import ai.djl.nn.pooling.Pool;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.Trainer;
import ai.djl.training.initializer.XavierInitializer;
import ai.djl.training.loss.Loss;
import ai.djl.util.Pair;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * One worker's model: computes the gradient of a batch as one flat {@code float[]} (every
 * parameter in block order) and steps SGD with momentum on the averaged aggregate. PyTorch computes
 * forward and backward; the step is computed here, on a flat copy of the parameters, and written
 * into the tensors' memory (w - lr v, as DJL's SGD computes it, without a tensor per parameter and
 * step). Same seed, same aggregates: bitwise the same model (one thread).
 * Not thread-safe; one per JVM (PyTorch allows one gradient collector per process).
 */
public final class DjlModel implements AutoCloseable {
    /** Pixels of one image. */
    public static final int PIXELS = 28 * 28;
    /** Classes. */
    public static final int CLASSES = 10;
    private final ModelKind kind;
    private final int batchSize;
    private final Model model;
    private final Trainer trainer;
    private final List<NDArray> weights = new ArrayList<>();
    private final int elements;
    private final float[] gradient;
    /** The parameters, flat in block order: the tensors hold a copy, written after every change. */
    private final float[] parameters;
    /** SGD momentum, kept here so each step can choose its coefficient. */
    private final float momentum;
    private final float[] velocity;
    /** Scratch for {@link #computeGradientAt} (the parameters held) and {@link #predictInto} (the velocity carried on). */
    private float[] held;
    /** The step {@link #held} was copied at (-1: never). */
    private int heldAtStep = -1;
    private long lastViewNs;
    private float[] predicted;
    private float lastLoss = Float.NaN;
    private final float learningRate;
    /** Steps applied since the warm-up (the same count on every worker: they apply the same aggregates). */
    private int steps;
    /** The learning-rate schedule and the run's steps it spans ({@link #cosineDecay}, {@link #cooldown}); 0: a constant rate. */
    private LrSchedule schedule = LrSchedule.CONSTANT;
    private int scheduleSteps;

    public DjlModel(final ModelKind kind, final int batchSize, final float learningRate, final float momentum, final long seed) {
        if (batchSize <= 0) {
            throw new IllegalArgumentException("batch size must be positive, was " + batchSize);
        }
        if (!(learningRate > 0)) {
            throw new IllegalArgumentException("learning rate must be positive, was " + learningRate);
        }
        this.kind = kind;
        this.batchSize = batchSize;
        Engine.getInstance().setRandomSeed((int) seed);
        model = Model.newInstance(kind.toString(), "PyTorch");
        model.setBlock(block(kind));
        if (!(momentum >= 0 && momentum < 1)) {
            throw new IllegalArgumentException("momentum must be in [0, 1), was " + momentum);
        }
        this.momentum = momentum;
        this.learningRate = learningRate;
        trainer = model.newTrainer(new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
            .optInitializer(new XavierInitializer(), Parameter.Type.WEIGHT));
        trainer.initialize(inputShape(1));
        int n = 0;
        for (final Pair<String, Parameter> p : model.getBlock().getParameters()) {
            final NDArray a = p.getValue().getArray();
            weights.add(a);
            n += Math.toIntExact(a.size());
        }
        elements = n;
        warmUp();
        gradient = new float[n];
        velocity = new float[n];
        parameters = new float[n];
        gather(false, parameters);
        requireOwnMemory();
    }

    /**
     * Makes the parameters' gradients exist before the first batch: PyTorch creates a parameter's
     * gradient only in a backward pass, and {@link #zeroGradients} takes each one. One backward pass
     * on a blank image; no step.
     */
    private void warmUp() {
        try (NDManager scope = trainer.getManager().newSubManager()) {
            try (GradientCollector collector = trainer.newGradientCollector()) {
                final NDList out = trainer.forward(new NDList(scope.zeros(inputShape(1))));
                collector.backward(trainer.getLoss().evaluate(new NDList(scope.zeros(new Shape(1))), out));
            }
        }
    }

    /**
     * Runs {@code count} forward and backward passes of {@code batch} blank images on the model as it
     * is and on a copy of its parameters ({@link #computeGradientAt}), so that the JIT and PyTorch have
     * warmed up before a job's clock starts (a modelled step must not overrun for a cold start). No
     * step is taken, nothing of the model changes.
     */
    public void warmUpSteps(final int batch, final int count) {
        final float[] pixels = new float[batch * PIXELS];
        final int[] labels = new int[batch];
        final float[] at = new float[elements];
        copyParameters(at);
        for (int i = 0; i < count; i++) {
            computeGradient(pixels, labels);
            computeGradientAt(at, pixels, labels);
        }
        heldAtStep = -1;
        lastLoss = Float.NaN;
    }

    /**
     * Checks that a parameter's direct buffer is the tensor's own memory (a contiguous tensor), not a
     * copy a write would be lost in: writes a changed first element through it and reads it back
     * through PyTorch, then puts it back.
     */
    private void requireOwnMemory() {
        for (final NDArray w : weights) {
            final FloatBuffer view = w.toByteBuffer(true).asFloatBuffer();
            final float was = view.get(0);
            view.put(0, was + 1f);
            final float seen = w.toFloatArray()[0];
            view.put(0, was);
            if (Float.floatToRawIntBits(seen) != Float.floatToRawIntBits(was + 1f)) {
                throw new IllegalStateException("PyTorch gave a copy of parameter " + w.getName() + "'s memory, not the memory itself");
            }
        }
    }

    private static SequentialBlock block(final ModelKind kind) {
        final SequentialBlock b = new SequentialBlock();
        if (kind == ModelKind.MLP) {
            b.add(Blocks.batchFlattenBlock(PIXELS))
                .add(Linear.builder().setUnits(128).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(CLASSES).build());
        } else {
            b.add(Conv2d.builder().setKernelShape(new Shape(5, 5)).optPadding(new Shape(2, 2)).setFilters(6).build())
                .add(Activation::relu).add(Pool.maxPool2dBlock(new Shape(2, 2), new Shape(2, 2)))
                .add(Conv2d.builder().setKernelShape(new Shape(5, 5)).setFilters(16).build())
                .add(Activation::relu).add(Pool.maxPool2dBlock(new Shape(2, 2), new Shape(2, 2)))
                .add(Blocks.batchFlattenBlock())
                .add(Linear.builder().setUnits(120).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(84).build()).add(Activation::relu)
                .add(Linear.builder().setUnits(CLASSES).build());
        }
        return b;
    }

    private Shape inputShape(final int batch) {
        return kind == ModelKind.MLP ? new Shape(batch, PIXELS) : new Shape(batch, 1, 28, 28);
    }

    /** Parameters in the flat gradient. */
    public int elements() {
        return elements;
    }

    public ModelKind kind() {
        return kind;
    }

    public int batchSize() {
        return batchSize;
    }

    /** Loss of the last {@link #computeGradient} batch. */
    public float lastLoss() {
        return lastLoss;
    }

    /**
     * Forward and backward on one batch (pixels in [0, 1], row-major, {@code labels.length}
     * images); returns the flat gradient (a buffer this model reuses: copy it to keep it).
     */
    public float[] computeGradient(final float[] pixels, final int[] labels) {
        final int batch = labels.length;
        try (NDManager scope = trainer.getManager().newSubManager()) {
            final NDArray x = scope.create(pixels, inputShape(batch));
            final NDArray y = scope.create(toFloats(labels), new Shape(batch));
            try (GradientCollector collector = trainer.newGradientCollector()) {
                // PyTorch adds each backward pass to the gradients; only the optimizer's step clears
                // them, and under a bound s > 0 several batches are computed between two steps
                zeroGradients();
                final NDList out = trainer.forward(new NDList(x));
                final NDArray loss = trainer.getLoss().evaluate(new NDList(y), out);
                collector.backward(loss);
                lastLoss = loss.getFloat();
            }
            gather(true, gradient);
        }
        return gradient;
    }

    /**
     * {@link #computeGradient} on other parameters ({@code at}, flat, block order), the model's own
     * left as they were, bitwise: for a worker computing ahead on the model it will have.
     */
    public float[] computeGradientAt(final float[] at, final float[] pixels, final int[] labels) {
        final long t0 = System.nanoTime();
        if (heldAtStep != steps) {
            copyParameters(held());
            heldAtStep = steps;
        }
        if (at.length != elements) {
            throw new IllegalArgumentException("parameters have " + at.length + " elements, the model " + elements);
        }
        load(at);
        final long t1 = System.nanoTime();
        try {
            return computeGradient(pixels, labels);
        } finally {
            final long t2 = System.nanoTime();
            load(held);
            lastViewNs = (t1 - t0) + (System.nanoTime() - t2);
        }
    }

    /** The time the last {@link #computeGradientAt} spent loading the other parameters and restoring these, ns. */
    public long lastViewNs() {
        return lastViewNs;
    }

    private float[] held() {
        if (held == null) {
            held = new float[elements];
        }
        return held;
    }

    /**
     * The parameters after {@code momenta.length} more steps (see {@link #applyGradient(float[], float)})
     * with momenta {@code momenta} and the scheduled learning rates, whose averaged gradients are
     * {@code first} plus {@code each} for the first step and {@code each} after (null: zero): the
     * velocity carries on as it will whatever the gradients are. Into {@code out}; the model is not changed.
     */
    public void predictInto(final float[] out, final float[] first, final float[] each, final float[] momenta) {
        if (out.length != elements || (first != null && first.length != elements) || (each != null && each.length != elements)) {
            throw new IllegalArgumentException("need " + elements + " elements");
        }
        // the parameters as they are, kept for computeGradientAt to restore (until the next step)
        if (heldAtStep != steps) {
            copyParameters(held());
            heldAtStep = steps;
        }
        System.arraycopy(held, 0, out, 0, elements);
        if (predicted == null) {
            predicted = new float[elements];
        }
        System.arraycopy(velocity, 0, predicted, 0, elements);
        for (int j = 0; j < momenta.length; j++) {
            final float lr = learningRate(steps + j);
            for (int i = 0; i < elements; i++) {
                final float g = (j == 0 && first != null ? first[i] : 0f) + (each != null ? each[i] : 0f);
                predicted[i] = momenta[j] * predicted[i] + g;
                out[i] -= lr * predicted[i];
            }
        }
    }

    /** The configured SGD momentum. */
    public float momentum() {
        return momentum;
    }

    /** One SGD step with the configured momentum: see {@link #applyGradient(float[], float)}. */
    public void applyGradient(final float[] averaged) {
        applyGradient(averaged, momentum);
    }

    /**
     * One SGD step with momentum {@code beta} on the averaged gradient: {@code v = beta v + g},
     * {@code w -= lr v} with the scheduled learning rate (what DJL's SGD computes, w - (lr v) in
     * float, so beta may change per step), written into the tensors' memory.
     */
    public void applyGradient(final float[] averaged, final float beta) {
        if (averaged.length != elements) {
            throw new IllegalArgumentException("gradient has " + averaged.length + " elements, the model " + elements);
        }
        final float lr = learningRate(steps);
        for (int i = 0; i < elements; i++) {
            velocity[i] = beta * velocity[i] + averaged[i];
            parameters[i] -= lr * velocity[i];
        }
        store();
        steps++;
    }

    /**
     * Decays the learning rate to 0 over {@code totalSteps} steps along a half cosine: step t
     * (from 0) takes lr x (1 + cos(pi t / T)) / 2, and every step from T on takes 0. 0 keeps it
     * constant (the default).
     */
    public void cosineDecay(final int totalSteps) {
        if (totalSteps < 0) {
            throw new IllegalArgumentException("decay steps must be >= 0, was " + totalSteps);
        }
        scheduleSteps = totalSteps;
        schedule = LrSchedule.COSINE;
    }

    /**
     * Keeps the learning rate constant, then decays it linearly to 0 over the last {@link LrSchedule#COOLDOWN_SHARE}
     * of {@code totalSteps} steps (C of them, from step T - C): step t takes lr x (T - t) / (C + 1)
     * there, so the last step still moves and every step from T on takes 0. A run at a constant rate
     * ends wherever its oscillation is; a cooldown lets its final model settle.
     */
    public void cooldown(final int totalSteps) {
        if (totalSteps < 0) {
            throw new IllegalArgumentException("cooldown steps must be >= 0, was " + totalSteps);
        }
        scheduleSteps = totalSteps;
        schedule = LrSchedule.COOLDOWN;
    }

    /** The learning rate of step {@code step} (from 0). */
    public float learningRate(final int step) {
        return schedule.rate(learningRate, step, scheduleSteps);
    }

    /** Copies every parameter, flat in block order, into {@code into} (of {@link #elements()} floats). */
    public void copyParameters(final float[] into) {
        if (into.length != elements) {
            throw new IllegalArgumentException("parameter copy has " + into.length + " elements, the model " + elements);
        }
        System.arraycopy(parameters, 0, into, 0, elements);
    }

    /** The SGD velocity (momentum buffer), into {@code into} (of {@link #elements()} floats). */
    public void copyVelocity(final float[] into) {
        if (into.length != elements) {
            throw new IllegalArgumentException("velocity copy has " + into.length + " elements, the model " + elements);
        }
        System.arraycopy(velocity, 0, into, 0, elements);
    }

    /** Optimizer steps taken (the learning-rate schedule's position). */
    public int steps() {
        return steps;
    }

    /**
     * Puts the model back where a checkpoint found it: parameters, velocity, steps taken and last
     * loss. With the same aggregates after it, it steps bitwise as the model it was taken from.
     */
    public void restore(final float[] parameters, final float[] savedVelocity, final int savedSteps, final float savedLoss) {
        if (savedVelocity.length != elements || savedSteps < 0) {
            throw new IllegalArgumentException("a checkpoint's velocity has " + savedVelocity.length + " elements (the model "
                + elements + ") and " + savedSteps + " steps");
        }
        loadParameters(parameters);
        System.arraycopy(savedVelocity, 0, velocity, 0, elements);
        steps = savedSteps;
        lastLoss = savedLoss;
    }

    /**
     * Overwrites every parameter with {@code from} (flat, block order, as {@link #copyParameters}
     * writes it), whatever the parameters held before (NaN included): for evaluating a copy taken
     * earlier. The momentum is left as it is; this is no training step.
     */
    public void loadParameters(final float[] from) {
        if (from.length != elements) {
            throw new IllegalArgumentException("parameters have " + from.length + " elements, the model " + elements);
        }
        heldAtStep = -1;
        load(from);
    }

    private void load(final float[] from) {
        System.arraycopy(from, 0, parameters, 0, elements);
        store();
    }

    /** Writes {@link #parameters} into the tensors' memory (checked to be theirs: {@link #requireOwnMemory}). */
    private void store() {
        int at = 0;
        for (final NDArray w : weights) {
            final int n = Math.toIntExact(w.size());
            w.toByteBuffer(true).asFloatBuffer().put(parameters, at, n);
            at += n;
        }
    }

    /**
     * Zeroes the parameters' gradients (PyTorch adds each backward pass to them). Not the gradient
     * collector's zeroGradients: that walks every array the engine manages, which grows with every
     * gradient handle ever taken, so a round cost more the longer a worker trained.
     */
    private void zeroGradients() {
        for (final NDArray w : weights) {
            try (NDArray g = w.getGradient()) {
                g.subi(g);
            }
        }
    }

    /**
     * Reads each parameter (or its gradient) into {@code flat}, in block order, straight from the
     * tensor's memory (no array per parameter and round). A gradient is a new handle each time it is
     * taken, closed once read, so the engine does not keep it.
     */
    private void gather(final boolean gradients, final float[] flat) {
        int at = 0;
        for (final NDArray w : weights) {
            final int n = Math.toIntExact(w.size());
            if (gradients) {
                try (NDArray g = w.getGradient()) {
                    g.toByteBuffer(true).asFloatBuffer().get(flat, at, n);
                }
            } else {
                w.toByteBuffer(true).asFloatBuffer().get(flat, at, n);
            }
            at += n;
        }
    }

    /** Accuracy on a labelled set, in batches of at most 1000 images. */
    public double accuracy(final float[] pixels, final int[] labels) {
        int correct = 0;
        final int step = 1000;
        for (int from = 0; from < labels.length; from += step) {
            final int n = Math.min(step, labels.length - from);
            final float[] part = new float[n * PIXELS];
            System.arraycopy(pixels, from * PIXELS, part, 0, n * PIXELS);
            try (NDManager scope = trainer.getManager().newSubManager()) {
                final NDArray logits = trainer.evaluate(new NDList(scope.create(part, inputShape(n)))).singletonOrThrow();
                final long[] predicted = logits.argMax(1).toLongArray();
                for (int i = 0; i < n; i++) {
                    correct += predicted[i] == labels[from + i] ? 1 : 0;
                }
            }
        }
        return labels.length == 0 ? 0 : (double) correct / labels.length;
    }

    /** SHA-256 of every parameter's bytes (little-endian floats, block order): equal models, equal hashes. */
    public String hash() {
        try {
            final MessageDigest sha = MessageDigest.getInstance("SHA-256");
            for (final NDArray w : weights) {
                final float[] v = w.toFloatArray();
                final ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
                b.asFloatBuffer().put(v);
                sha.update(b);
            }
            return HexFormat.of().formatHex(sha.digest());
        } catch (final NoSuchAlgorithmException ex) {
            throw new IllegalStateException(ex);
        }
    }

    private static float[] toFloats(final int[] labels) {
        final float[] f = new float[labels.length];
        for (int i = 0; i < labels.length; i++) {
            f[i] = labels[i];
        }
        return f;
    }

    @Override
    public void close() {
        trainer.close();
        model.close();
    }
}
