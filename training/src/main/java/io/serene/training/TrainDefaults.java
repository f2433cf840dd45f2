package io.serene.training;

/**
 * The defaults of every training option, in one place: `serene train`, `serene worker`, `serene
 * demo`, the launcher's settings and experiment files all read them from here. Strings, so that
 * command-line annotations can name them; the typed accessors parse the same strings.
 */
public final class TrainDefaults {
    public static final String WORKERS = "4";
    public static final String MODEL = "mlp";
    public static final String POLICY = "bsp";
    public static final String STRAGGLERS = "none";
    public static final String BATCH = "64";
    public static final String LEARNING_RATE = "0.05";
    public static final String MOMENTUM = "0.9";
    public static final String LR_SCHEDULE = "constant";
    public static final String STALE_MOMENTUM = "auto";
    public static final String COMPUTE_ON = "predicted";
    public static final String FRESH_WAIT = "compute";
    public static final String STALE_SCALE = "inverse";
    public static final String DELAY_COMPENSATION = "0";
    public static final String COMPUTE_CLOCK = "cpu";
    /** The modelled step (serene worker --step-time): 0, the host's speed; the demo and experiment files set their own. */
    public static final String STEP_TIME = "0";
    public static final String WORKER_JIT = "c1";
    /** Test-set evaluation every this many rounds (0: only at the end). */
    public static final String EVAL_EVERY = "25";
    public static final String TARGET_ACCURACY = "0.8";
    public static final String SEED = "1";
    public static final String TIMEOUT_SECONDS = "60";

    private TrainDefaults() {
    }

    public static int workers() {
        return Integer.parseInt(WORKERS);
    }

    public static int batch() {
        return Integer.parseInt(BATCH);
    }

    public static float learningRate() {
        return Float.parseFloat(LEARNING_RATE);
    }

    public static float momentum() {
        return Float.parseFloat(MOMENTUM);
    }

    public static int evalEvery() {
        return Integer.parseInt(EVAL_EVERY);
    }

    public static double targetAccuracy() {
        return Double.parseDouble(TARGET_ACCURACY);
    }

    public static long seed() {
        return Long.parseLong(SEED);
    }

    public static int timeoutSeconds() {
        return Integer.parseInt(TIMEOUT_SECONDS);
    }
}
