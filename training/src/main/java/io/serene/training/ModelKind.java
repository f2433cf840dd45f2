package io.serene.training;

import java.util.Locale;

/** The models a worker can train on 28x28 grey images with 10 classes. */
public enum ModelKind {
    /** 784-128-10, ReLU. */
    MLP,
    /** LeNet-style: conv 6@5x5, pool, conv 16@5x5, pool, 120, 84, 10. */
    CNN;

    /** Parses {@code mlp} or {@code cnn} (any case); anything else is a clear error. */
    public static ModelKind parse(final String text) {
        for (final ModelKind k : values()) {
            if (k.name().equalsIgnoreCase(text.trim())) {
                return k;
            }
        }
        throw new IllegalArgumentException("unknown model '" + text + "': expected mlp or cnn");
    }

    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
