package io.serene.training;

import java.nio.file.Path;
import java.util.List;

/**
 * Writes worker 0's checkpoints of a large model into a directory, one round after another, until
 * it is killed ({@link CheckpointTest}'s kill -9 during a write). Prints each round once it is written.
 */
public final class CheckpointWriterMain {
    private CheckpointWriterMain() {
    }

    public static void main(final String[] args) throws Exception {
        final Path dir = Path.of(args[0]);
        final float[] model = new float[4 << 20];
        final RoundRecords.Saved records = new RoundRecords.Saved(new double[0], new long[0], new long[0], new long[0], new double[0],
            new double[0], new int[0], new int[0], new float[0], new boolean[0], new boolean[0], new double[0], new double[0], 0, 0,
            new long[0]);
        for (int round = 1; ; round++) {
            model[round % model.length] = round;
            new Checkpoint(0, 1, round, "--model mlp", model, model, round, 0f, 0L, new int[0], new float[0], new float[0],
                new float[0], null, 0L, List.of(), records).write(dir);
            System.out.println(round);
            System.out.flush();
        }
    }
}
