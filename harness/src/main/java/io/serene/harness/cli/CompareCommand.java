package io.serene.harness.cli;

import io.serene.harness.experiment.Comparison;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;

/** {@code serene compare A B}: two experiment outputs side by side, e.g. virtual time against the wall clock. */
@Command(name = "compare", mixinStandardHelpOptions = true,
    description = {"Puts two experiment outputs (their --out directories) side by side, cell by cell (scenario and policy) over the "
        + "seeds both ran: job time, time to the target, final accuracy, B against A, and each one's clock. A cell agrees when B's "
        + "time to the target is within 10%% of A's and its accuracy within 0.5 points.",
        "E.g. serene compare runs/serene-paper runs/serene-paper-virtual: how well virtual time predicts the wall clock."})
public final class CompareCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "A", description = "The reference output (e.g. the wall-clock runs).")
    Path a;

    @Parameters(index = "1", paramLabel = "B", description = "The output compared with it (e.g. the same file in virtual time).")
    Path b;

    @Override
    public Integer call() throws Exception {
        final List<Comparison.Cell> cells = Comparison.of(a, b);
        if (cells.isEmpty()) {
            throw new IllegalArgumentException("no cell (scenario, policy and seed) is in both " + a + " and " + b);
        }
        System.out.printf(Locale.ROOT, "A: %s (%s clock)%nB: %s (%s clock)%n", a, cells.get(0).clockA(), b, cells.get(0).clockB());
        System.out.printf(Locale.ROOT, "%-36s %-8s %5s  %8s %8s %6s  %8s %8s %6s  %7s %7s %6s  %s%n", "scenario", "policy", "seeds",
            "JCT A", "JCT B", "B/A", "TTA A", "TTA B", "B/A", "acc A", "acc B", "pp", "agrees");
        int agree = 0;
        for (final Comparison.Cell c : cells) {
            agree += c.agrees() ? 1 : 0;
            System.out.printf(Locale.ROOT, "%-36s %-8s %5d  %8.2f %8.2f %6.2f  %8s %8s %6s  %7.4f %7.4f %+6.2f  %s%n", c.scenario(), c.policy(),
                c.seeds().size(), c.jctA(), c.jctB(), c.jctB() / c.jctA(), time(c.ttaA()), time(c.ttaB()),
                c.ttaA() == null || c.ttaB() == null ? "-" : String.format(Locale.ROOT, "%.2f", c.ttaB() / c.ttaA()), c.accuracyA(),
                c.accuracyB(), 100 * (c.accuracyB() - c.accuracyA()), c.agrees() ? "yes" : "no");
        }
        System.out.printf(Locale.ROOT, "%d of %d cells agree (time to the target within %.0f%%, accuracy within %.1f points)%n", agree,
            cells.size(), 100 * Comparison.TIME_TOLERANCE, Comparison.ACCURACY_TOLERANCE_PP);
        return 0;
    }

    private static String time(final Double seconds) {
        return seconds == null ? "never" : String.format(Locale.ROOT, "%.2f", seconds);
    }
}
