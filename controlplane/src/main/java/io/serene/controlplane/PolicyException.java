package io.serene.controlplane;

/** A policy text error at a line and column; {@link #getMessage()} shows the line with a caret under the bad token. */
public final class PolicyException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int line;
    private final int column;

    PolicyException(final String source, final int line, final int column, final String message) {
        super(render(source, line, column, message));
        this.line = line;
        this.column = column;
    }

    public int line() {
        return line;
    }

    public int column() {
        return column;
    }

    private static String render(final String source, final int line, final int column, final String message) {
        final String[] lines = source.split("\n", -1);
        final String text = line >= 1 && line <= lines.length ? lines[line - 1].replace("\t", " ") : "";
        return line + ":" + column + ": " + message + "\n  " + text + "\n  " + " ".repeat(Math.max(0, column - 1)) + "^";
    }
}
