package io.serene.harness.launch;

import java.util.ArrayList;
import java.util.List;

/**
 * Faults {@code serene train} injects on purpose ({@code --faults}): {@code kill:W@R} kills worker
 * W's process (SIGKILL, as a crash or an out-of-memory kill would) once the switch has released
 * round R; several separated by commas; {@code none} for none. The same plan kills at the same
 * rounds in every run, so runs with faults compare with runs without.
 */
public record FaultPlan(List<Fault> faults) {
    /** One fault. */
    public record Fault(int worker, int round) {
        @Override
        public String toString() {
            return "kill:" + worker + "@" + round;
        }
    }

    public static final FaultPlan NONE = new FaultPlan(List.of());

    /** Parses the option's text; the worker ids are checked against {@code workers}. */
    public static FaultPlan parse(final String text, final int workers) {
        if (text == null || text.isBlank() || text.trim().equals("none")) {
            return NONE;
        }
        final List<Fault> faults = new ArrayList<>();
        for (final String part : text.split(",")) {
            final String p = part.trim();
            if (!p.matches("kill:\\d+@\\d+")) {
                throw new IllegalArgumentException("--faults: unknown fault '" + p + "' (expected kill:WORKER@ROUND, e.g. kill:3@100, "
                    + "comma-separated, or none)");
            }
            final int worker = Integer.parseInt(p.substring(5, p.indexOf('@')));
            final int round = Integer.parseInt(p.substring(p.indexOf('@') + 1));
            if (worker >= workers) {
                throw new IllegalArgumentException("--faults: " + p + " names worker " + worker + ", the job has workers 0.." + (workers - 1));
            }
            if (faults.stream().anyMatch(f -> f.worker == worker)) {
                throw new IllegalArgumentException("--faults: worker " + worker + " is killed twice");
            }
            faults.add(new Fault(worker, round));
        }
        return new FaultPlan(List.copyOf(faults));
    }

    @Override
    public String toString() {
        return faults.isEmpty() ? "none" : String.join(",", faults.stream().map(Fault::toString).toList());
    }
}
