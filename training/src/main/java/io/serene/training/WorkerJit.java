package io.serene.training;

/**
 * The JIT of worker JVMs a launcher starts on its own host: C1 stops at the quick compiler (the
 * workers share the host, and 8 of them compiling with C2 on 2 cores take the processor from
 * training for the whole run), TIERED is the JVM's default.
 */
public enum WorkerJit {
    C1,
    TIERED;

    public static WorkerJit parse(final String what, final String value) {
        return Choice.parse(WorkerJit.class, what, value);
    }

    public String text() {
        return Choice.text(this);
    }
}
