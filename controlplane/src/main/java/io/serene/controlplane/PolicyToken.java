package io.serene.controlplane;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/** A token of the policy language: a word (lower-cased), a number, a symbol, or the end of the line; and the tokenizer. */
final class PolicyToken {
    /** What a token is. */
    enum Kind { WORD, NUMBER, SYMBOL, END }

    /** The language's keywords and config words, which no group may be named. */
    static final Set<String> RESERVED = Set.of("policy", "group", "start", "when", "then", "in",
        "for", "smooth", "auto", "floor", "bsp", "asp", "ssp", "psp", "wbsp", "busy", "sample", "fastest", "quorum", "timeout", "fold", "drop", "exclude",
        "include", Policy.DEFAULT_GROUP);

    final Kind kind;
    final String text;
    /** Its column in the line, from 1. */
    final int column;

    PolicyToken(final Kind kind, final String text, final int column) {
        this.kind = kind;
        this.text = text;
        this.column = column;
    }

    /** The token as an error message names it. */
    String describe() {
        return kind == Kind.END ? "the end of the line" : "'" + text + "'";
    }

    /** The tokens of line {@code line} of {@code source}, {@code text}, ending with an END token; errors name line and column. */
    static List<PolicyToken> tokenize(final String source, final int line, final String text) {
        final List<PolicyToken> out = new ArrayList<>();
        int i = 0;
        while (i < text.length()) {
            final char c = text.charAt(i);
            if (c == '#') {
                break;
            }
            if (Character.isWhitespace(c)) {
                i++;
                continue;
            }
            final int start = i;
            if (Character.isLetter(c) || c == '_') {
                while (i < text.length() && (Character.isLetterOrDigit(text.charAt(i)) || text.charAt(i) == '_'
                    || text.charAt(i) == '-')) {
                    i++;
                }
                out.add(new PolicyToken(Kind.WORD, text.substring(start, i).toLowerCase(Locale.ROOT), start + 1));
            } else if (Character.isDigit(c) || (c == '.' && i + 1 < text.length() && Character.isDigit(text.charAt(i + 1)))) {
                while (i < text.length() && (Character.isDigit(text.charAt(i)) || text.charAt(i) == '.')) {
                    i++;
                }
                final String number = text.substring(start, i);
                if (number.indexOf('.') != number.lastIndexOf('.')) {
                    throw new PolicyException(source, line, start + 1, "malformed number '" + number + "'");
                }
                out.add(new PolicyToken(Kind.NUMBER, number, start + 1));
            } else if ((c == '>' || c == '<' || c == '=') && i + 1 < text.length() && text.charAt(i + 1) == '=') {
                out.add(new PolicyToken(Kind.SYMBOL, text.substring(i, i + 2), start + 1));
                i += 2;
            } else if ("()+<>,=:%".indexOf(c) >= 0) {
                out.add(new PolicyToken(Kind.SYMBOL, String.valueOf(c), start + 1));
                i++;
            } else {
                throw new PolicyException(source, line, start + 1, "unexpected character '" + c + "'");
            }
        }
        out.add(new PolicyToken(Kind.END, "", text.length() + 1));
        return out;
    }
}
