package io.serene.harness.bench;

import io.serene.launch.PythonScript;
import io.serene.training.Json;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The allreduce users would pick instead on a CPU cluster: PyTorch's gloo, run by
 * {@code benchmarks/gloo/allreduce.py} with the same workers (processes, one thread each, on
 * 127.0.0.1), elements and rounds, every result checked exactly. Needs Debian's {@code python3-torch}.
 */
public final class GlooBaseline {
    /**
     * One run of the script: its goodput (elements times rounds per measured second), time, exactness
     * and the processor time all its processes spent in a measured round (seconds, every thread counted).
     */
    public record Result(String baseline, int workers, int elements, int rounds, double seconds, boolean exact,
                         double elementsPerSecond, double cpuSecondsPerRound) {
    }

    private final Path script;
    private final String python;

    public GlooBaseline(final Path script, final String python) {
        this.script = script;
        this.python = python;
    }

    /** The script shipped with this checkout ({@link PythonScript#shipped}). */
    public static Path defaultScript() {
        return PythonScript.shipped(Path.of("benchmarks", "gloo", "allreduce.py"));
    }

    /** Runs the script once; a missing PyTorch, script or python is an error saying what to install. */
    public Result run(final int workers, final int elements, final int rounds, final int warmup, final long seed, final long timeoutSeconds)
        throws IOException, InterruptedException {
        if (!Files.isRegularFile(script)) {
            throw new IllegalArgumentException("--baseline gloo: no script at " + script + " (--gloo-script PATH)");
        }
        final String last = PythonScript.run("--baseline gloo", python, script, List.of("--workers", "" + workers, "--elements",
            "" + elements, "--rounds", "" + rounds, "--warmup", "" + warmup, "--seed", "" + seed), timeoutSeconds);
        return Json.read(last, Result.class);
    }
}
