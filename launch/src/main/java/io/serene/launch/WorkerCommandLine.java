package io.serene.launch;

import io.serene.training.TrainSettings;
import io.serene.training.WorkerJit;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;

/** The command lines a run's processes are started with: this JVM's, running {@code serene worker} (or {@code serene agent}). */
final class WorkerCommandLine {
    private WorkerCommandLine() {
    }

    /**
     * Worker w's command: {@code rounds} rounds against the switch at {@code switchAddress}, its
     * records on the run's time axis from {@code epochMs}; from a checkpoint after round {@code base}
     * (0: the start), or {@code rejoin}ing a job under way.
     */
    static List<String> of(final RunSettings s, final TrainSettings t, final RunFiles files, final int w, final int rounds,
                           final String switchAddress, final long epochMs, final int base, final boolean rejoin) {
        final List<String> command = jvm();
        if (s.workerJit() == WorkerJit.C1) {
            command.add("-XX:TieredStopAtLevel=1");
        }
        command.addAll(List.of("-Dai.djl.offline=true", "-Dai.djl.pytorch.num_threads=1", "-Dai.djl.pytorch.num_interop_threads=1",
            "-Xmx512m", "-Xmn32m", "-cp", System.getProperty("java.class.path"), TrainRun.WORKER_MAIN, "worker",
            "--switch", switchAddress, "--job", "" + s.job(), "--id", "" + w, "--workers", "" + s.workers()));
        // every worker runs the same number of rounds: the launcher resolves epochs once, for the smallest shard
        command.addAll(t.toBuilder().rounds(rounds).epochs(null).build().arguments());
        command.addAll(List.of("--records", files.recordsFile(w).toString(), "--epoch-ms", "" + epochMs,
            "--progress-lines", "--exit-with-parent", "--eval-when-told", "--evaluation-share", files.evaluationShare().toString()));
        if (!rejoin) {
            // the job starts once every worker joined; a worker brought back joins a job under way
            command.add("--start-when-told");
        }
        if (s.checkpointEvery() > 0 || base > 0) {
            command.addAll(List.of("--checkpoint-dir", files.checkpoints().toString(), "--checkpoint-every", "" + s.checkpointEvery()));
        }
        if (rejoin) {
            command.add("--rejoin");
        } else if (base > 0) {
            command.addAll(List.of("--resume-after", "" + base));
        }
        return command;
    }

    /**
     * The command a PyTorch rank's client starts its agent with, one line quoted as a shell would (python/serene
     * splits it with shlex and appends {@code agent} and its options): this JVM's, running {@code serene}, with room
     * for a model's rounds.
     */
    static String agent() {
        final List<String> command = jvm();
        command.addAll(List.of("-Xmx1g", "-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), TrainRun.WORKER_MAIN));
        return String.join(" ", command.stream().map(a -> a.matches("[A-Za-z0-9_./:=+,@%-]+") ? a : "'" + a.replace("'", "'\\''") + "'")
            .toList());
    }

    /** This JVM's java and the flags a JVM it starts takes over: system properties, native access, opened modules. */
    private static List<String> jvm() {
        final List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElse(System.getProperty("java.home") + "/bin/java"));
        for (final String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (arg.startsWith("-D") || arg.startsWith("--sun-misc-unsafe") || arg.startsWith("--enable-native-access")
                || arg.startsWith("--add-opens")) {
                command.add(arg);
            }
        }
        return command;
    }
}
