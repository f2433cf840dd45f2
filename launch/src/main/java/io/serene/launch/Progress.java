package io.serene.launch;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.Locale;
import java.util.Objects;

/**
 * The run's progress on one line: on a terminal a bar redrawn in place, otherwise a line per
 * tenth of the rounds. Other output goes through {@link #println} so the two do not mix.
 */
final class Progress {
    private final PrintStream out;
    private final int total;
    private final int[] rounds;
    private final boolean[] failed;
    private final boolean terminal = System.console() != null;
    private final long startNs = System.nanoTime();
    private double loss = Double.NaN;
    private String accuracy;
    private String stall;
    private int printedTenth = -1;
    private long drawnNs;
    private boolean drawn;

    Progress(final PrintStream out, final int workers, final int total, final boolean deferredEval) {
        this.out = out;
        this.total = total;
        this.rounds = new int[workers];
        this.failed = new boolean[workers];
        this.accuracy = deferredEval ? "after training" : "-";
    }

    synchronized void round(final int w, final int round, final double lastLoss) {
        rounds[w] = round;
        if (w == 0) {
            loss = lastLoss;
        }
        final int min = slowest();
        final long now = System.nanoTime();
        if (terminal) {
            if (now - drawnNs > 200_000_000L || min == total) {
                drawnNs = now;
                draw(min);
            }
        } else {
            final int tenth = (int) (10L * min / total);
            if (tenth > printedTenth) {
                printedTenth = tenth;
                out.println(line(min));
                out.flush();
            }
        }
    }

    /** The job was relaunched from its checkpoint after {@code roundsDone} rounds: every worker is there again. */
    synchronized void relaunched(final int roundsDone) {
        Arrays.fill(rounds, roundsDone);
        Arrays.fill(failed, false);
        stall = null;
        printedTenth = (int) (10L * roundsDone / total);
    }

    /** A worker restarted: the line follows it again. */
    synchronized void revived(final int w) {
        failed[w] = false;
    }

    /** A worker that died: the line follows the others from now on. */
    synchronized void failed(final int w) {
        failed[w] = true;
    }

    /** The rounds worker w has finished. */
    synchronized int roundOf(final int w) {
        return rounds[w];
    }

    /** The rounds the slowest live worker has finished. */
    private int slowest() {
        int min = Integer.MAX_VALUE;
        for (int w = 0; w < rounds.length; w++) {
            if (!failed[w]) {
                min = Math.min(min, rounds[w]);
            }
        }
        return min == Integer.MAX_VALUE ? 0 : min;
    }

    synchronized void evaluated(final int w, final String line) {
        final int at = line.indexOf("accuracy ");
        if (w == 0 && at >= 0) {
            accuracy = line.substring(at + "accuracy ".length()).trim();
        }
    }

    /** A stall to show in the progress line (null: none); redrawn at once on a terminal. */
    synchronized void stall(final String text) {
        if (Objects.equals(text, stall)) {
            return;
        }
        stall = text;
        if (drawn) {
            draw(-1);
        }
    }

    synchronized void println(final String line) {
        if (drawn) {
            out.print("\r\033[K");
        }
        out.println(line);
        if (drawn) {
            draw(-1);
        }
        out.flush();
    }

    synchronized void finish() {
        if (drawn) {
            out.print("\r\033[K");
            out.flush();
            drawn = false;
        }
    }

    private void draw(final int minRound) {
        final int min = minRound < 0 ? slowest() : minRound;
        out.print("\r\033[K" + line(min));
        out.flush();
        drawn = true;
    }

    private String line(final int min) {
        int max = 0;
        for (final int r : rounds) {
            max = Math.max(max, r);
        }
        final int width = 24;
        final int filled = total == 0 ? width : (int) ((long) width * min / total);
        return String.format(Locale.ROOT, "[%s%s] round %d/%d (fastest %d)  loss %.4f  accuracy %s  %.1f s%s",
            "#".repeat(filled), ".".repeat(width - filled), min, total, max, loss, accuracy, (System.nanoTime() - startNs) / 1e9,
            stall == null ? "" : "  STALLED: " + stall);
    }
}
