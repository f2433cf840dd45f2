package io.serene.training;

import java.util.Objects;
import java.util.stream.Stream;

/**
 * What a rebuilt job can go on from, kept in memory by a worker's training loop after a round that
 * left nothing pending: the model, the data position, the batch window, read-my-writes, what the
 * engine folds, the held gradient (arrays reused from one round to the next).
 */
final class LoopSnapshot {
    /** Copies the values the worker's engine will fold into its next round. */
    @FunctionalInterface
    interface FoldedSource {
        void copyInto(float[] into) throws InterruptedException;
    }

    /** The snapshots a loop keeps: the start, and the two newest rounds that left nothing pending (arrays reused). */
    static final class Kept {
        private final int elements;
        private final LoopSnapshot start;
        private LoopSnapshot current;
        private LoopSnapshot previous;

        Kept(final int elements) {
            this.elements = elements;
            this.start = new LoopSnapshot(elements);
        }

        LoopSnapshot start() {
            return start;
        }

        /** The snapshot to take next: the older of the two newest becomes the newest. */
        LoopSnapshot next() {
            final LoopSnapshot older = previous;
            previous = current;
            current = older == null ? new LoopSnapshot(elements) : older;
            return current;
        }

        /** The rounds the two newest were taken after. */
        int[] rounds() {
            return Stream.of(current, previous).filter(Objects::nonNull).mapToInt(s -> s.roundsDone).toArray();
        }

        /** The snapshot taken after {@code rounds} rounds (0: the start), or null if none was. */
        LoopSnapshot after(final int rounds) {
            return rounds == 0 ? start : current != null && current.roundsDone == rounds ? current
                : previous != null && previous.roundsDone == rounds ? previous : null;
        }

        /** Forgets the two newest (the job went back; the start stays). */
        void forgetNewer() {
            current = null;
            previous = null;
        }
    }

    int roundsDone;
    final float[] parameters;
    final float[] velocity;
    final float[] unreleasedCopy;
    final float[] averagedCopy;
    final float[] folded;
    int steps;
    float lastLoss;
    long drawn;
    int[] globalBatch;
    Checkpoint.Held heldGradient;
    long computeNs;

    LoopSnapshot(final int elements) {
        parameters = new float[elements];
        velocity = new float[elements];
        unreleasedCopy = new float[elements];
        averagedCopy = new float[elements];
        folded = new float[elements];
    }

    /**
     * Takes the state after {@code rounds} rounds: the model's, the worker's own unreleased values and
     * last average, what the engine folds (nothing before the first round), the data position and batch
     * window, the gradient it holds and its last compute time.
     */
    void take(final int rounds, final DjlModel net, final float[] unreleased, final float[] averaged, final FoldedSource foldedValues,
              final long drawnImages, final int[] batchWindow, final Checkpoint.Held held, final long lastComputeNs)
        throws InterruptedException {
        roundsDone = rounds;
        net.copyParameters(parameters);
        net.copyVelocity(velocity);
        System.arraycopy(unreleased, 0, unreleasedCopy, 0, unreleased.length);
        System.arraycopy(averaged, 0, averagedCopy, 0, averaged.length);
        if (rounds > 0) {
            foldedValues.copyInto(folded);
        }
        steps = net.steps();
        lastLoss = net.lastLoss();
        drawn = drawnImages;
        globalBatch = batchWindow;
        // the held gradient lives in the model's buffer, which the next computation overwrites
        heldGradient = held == null ? null : held.withGradient(held.gradient().clone());
        computeNs = lastComputeNs;
    }
}
