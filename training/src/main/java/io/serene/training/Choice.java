package io.serene.training;

import java.util.Locale;
import java.util.StringJoiner;

/** Parses an option's text into one of an enum's constants (named in lower case), with an error naming the option and the choices. */
final class Choice {
    private Choice() {
    }

    static <E extends Enum<E>> E parse(final Class<E> type, final String what, final String value) {
        final E[] constants = type.getEnumConstants();
        final StringJoiner names = new StringJoiner(", ");
        for (int i = 0; i < constants.length; i++) {
            final String name = text(constants[i]);
            if (name.equals(value)) {
                return constants[i];
            }
            if (i < constants.length - 1) {
                names.add(name);
            }
        }
        // "a, b or c", as the help texts name them
        throw new IllegalArgumentException(what + " must be " + names + " or " + text(constants[constants.length - 1])
            + ", was '" + value + "'");
    }

    static String text(final Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }
}
