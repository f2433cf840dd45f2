package io.serene.training;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

/**
 * The clock a worker reads its compute time on, the time it reports to the switch (serene worker
 * --compute-clock): what slowdown(worker) and lag compare. On a host of its own a worker's training
 * thread runs whenever it is ready, and the two clocks agree; with more worker processes than cores
 * the OS preempts them in turn, and a step of 2.5 ms takes 20 ms now and then on the wall clock, as
 * slow as an injected 8x straggler, while the thread's processor time stays 2.5 ms.
 */
public enum ComputeClock {
    /** The calling thread's processor time: time the OS gave to other threads is not in it. */
    CPU {
        @Override
        public long nanos() {
            return THREADS.getCurrentThreadCpuTime();
        }
    },
    /** Elapsed time, preemption included: a worker slowed by a co-located job shows as slow. */
    WALL {
        @Override
        public long nanos() {
            return System.nanoTime();
        }
    };

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    /** Now, in nanoseconds on this clock (differences only). */
    public abstract long nanos();

    /** The clock named {@code value} (cpu or wall), else an error naming {@code what} (a flag or a key). */
    public static ComputeClock parse(final String what, final String value) {
        if (value.equals("cpu")) {
            if (!THREADS.isCurrentThreadCpuTimeSupported()) {
                throw new IllegalArgumentException(what + " cpu: this JVM cannot measure a thread's processor time; use wall");
            }
            if (!THREADS.isThreadCpuTimeEnabled()) {
                THREADS.setThreadCpuTimeEnabled(true);
            }
            return CPU;
        }
        if (value.equals("wall")) {
            return WALL;
        }
        throw new IllegalArgumentException(what + " must be cpu or wall, was '" + value + "'");
    }

    /** The name on the command line and in experiment files. */
    public String text() {
        return Choice.text(this);
    }
}
