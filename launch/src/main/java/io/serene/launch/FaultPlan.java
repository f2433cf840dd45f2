package io.serene.launch;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Faults {@code serene train} injects on purpose ({@code --faults}), several separated by commas,
 * or {@code none}:
 * <ul>
 *   <li>{@code kill:W@R}: kills worker W's process (SIGKILL, as a crash or an out-of-memory kill
 *       would) once the switch has released round R;</li>
 *   <li>{@code restart:W@R}: brings a killed worker W back once round R is released, or as soon as
 *       the job cannot go on without it (it waits for W): the job is relaunched from the newest
 *       checkpoint every worker holds (from the start without checkpoints);</li>
 *   <li>{@code switch-restart@R}: the switch loses all its state once round R is released (it is
 *       closed and a new one started); the job is relaunched from the newest checkpoint.</li>
 * </ul>
 * Each fault fires once. The same plan fires at the same rounds in every run, so runs with faults
 * compare with runs without.
 */
public record FaultPlan(List<Fault> faults) {
    /** What a fault does. */
    public enum Kind {
        KILL("kill"), RESTART("restart"), SWITCH_RESTART("switch-restart");

        final String text;

        Kind(final String text) {
            this.text = text;
        }
    }

    /** One fault: its kind, the worker (-1 for the switch) and the round whose release fires it. */
    public record Fault(Kind kind, int worker, int round) {
        @Override
        public String toString() {
            return kind.text + (worker < 0 ? "" : ":" + worker) + "@" + round;
        }
    }

    public static final FaultPlan NONE = new FaultPlan(List.of());
    private static final Pattern WORKER_FAULT = Pattern.compile("(kill|restart):(\\d+)@(\\d+)");
    private static final Pattern SWITCH_FAULT = Pattern.compile("switch-restart@(\\d+)");

    /** Parses the option's text; the worker ids are checked against {@code workers}. */
    public static FaultPlan parse(final String text, final int workers) {
        if (text == null || text.isBlank() || text.trim().equals("none")) {
            return NONE;
        }
        final List<Fault> faults = new ArrayList<>();
        for (final String part : text.split(",")) {
            final String p = part.trim();
            final Matcher w = WORKER_FAULT.matcher(p);
            final Matcher s = SWITCH_FAULT.matcher(p);
            final Fault f;
            if (w.matches()) {
                f = new Fault(w.group(1).equals("kill") ? Kind.KILL : Kind.RESTART, number(p, w.group(2)), number(p, w.group(3)));
            } else if (s.matches()) {
                f = new Fault(Kind.SWITCH_RESTART, -1, number(p, s.group(1)));
            } else {
                throw new IllegalArgumentException("--faults: unknown fault '" + p + "' (expected kill:WORKER@ROUND, restart:WORKER@ROUND "
                    + "or switch-restart@ROUND, e.g. kill:3@100,restart:3@140, comma-separated, or none)");
            }
            if (f.worker >= workers) {
                throw new IllegalArgumentException("--faults: " + p + " names worker " + f.worker + ", the job has workers 0.." + (workers - 1));
            }
            if (faults.stream().anyMatch(o -> o.kind == f.kind && o.worker == f.worker && (f.kind != Kind.SWITCH_RESTART || o.round == f.round))) {
                throw new IllegalArgumentException("--faults: " + p + " repeats a fault (each worker is killed and restarted at most once)");
            }
            faults.add(f);
        }
        for (final Fault f : faults) {
            if (f.kind == Kind.RESTART && faults.stream().noneMatch(k -> k.kind == Kind.KILL && k.worker == f.worker && k.round < f.round)) {
                throw new IllegalArgumentException("--faults: " + f + " restarts worker " + f.worker + ", which no earlier kill:" + f.worker
                    + "@R (R < " + f.round + ") kills");
            }
        }
        return new FaultPlan(List.copyOf(faults));
    }

    private static int number(final String part, final String digits) {
        try {
            return Integer.parseInt(digits);
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException("--faults: " + part + ": " + digits + " is out of range");
        }
    }

    /** The restart of worker w this plan holds, or null. */
    public Fault restartOf(final int worker) {
        return faults.stream().filter(f -> f.kind == Kind.RESTART && f.worker == worker).findFirst().orElse(null);
    }

    /** Whether any fault relaunches the job (a restart of a worker or of the switch). */
    public boolean relaunches() {
        return faults.stream().anyMatch(f -> f.kind != Kind.KILL);
    }

    @Override
    public String toString() {
        return faults.isEmpty() ? "none" : String.join(",", faults.stream().map(Fault::toString).toList());
    }
}
