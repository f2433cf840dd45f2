package io.serene.harness.bench;

import io.serene.training.Json;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

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

    /** The script shipped with this checkout: under the launcher's serene.home, else found upwards from the working directory. */
    public static Path defaultScript() {
        final String home = System.getProperty("serene.home");
        final Path relative = Path.of("benchmarks", "gloo", "allreduce.py");
        if (home != null) {
            return Path.of(home).resolve(relative);
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve(relative))) {
                return dir.resolve(relative);
            }
        }
        return relative;
    }

    /** Runs the script once; a missing PyTorch, script or python is an error saying what to install. */
    public Result run(final int workers, final int elements, final int rounds, final int warmup, final long seed, final long timeoutSeconds)
        throws IOException, InterruptedException {
        if (!Files.isRegularFile(script)) {
            throw new IllegalArgumentException("--baseline gloo: no script at " + script + " (--gloo-script PATH)");
        }
        final Process p;
        try {
            p = new ProcessBuilder(List.of(python, script.toString(), "--workers", "" + workers, "--elements", "" + elements,
                "--rounds", "" + rounds, "--warmup", "" + warmup, "--seed", "" + seed)).redirectErrorStream(true).start();
        } catch (final IOException ex) {
            throw new IllegalArgumentException("--baseline gloo: cannot run " + python + " (apt-get install python3-torch): "
                + ex.getMessage(), ex);
        }
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("--baseline gloo: no result within " + timeoutSeconds + " s");
        }
        final String[] lines = out.strip().split("\n");
        final String last = lines.length == 0 ? "" : lines[lines.length - 1];
        if (p.exitValue() != 0 || !last.startsWith("{")) {
            if (out.contains("No module named 'torch'") || out.contains("PyTorch is not installed")) {
                throw new IllegalArgumentException("--baseline gloo needs PyTorch: apt-get install python3-torch (run with " + python + ")");
            }
            throw new IllegalStateException("--baseline gloo: " + script + " failed (exit " + p.exitValue() + "): " + out.strip());
        }
        return Json.read(last, Result.class);
    }
}
