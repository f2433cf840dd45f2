package io.serene.launch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A baseline script shipped under {@code benchmarks/} and run with Debian's Python and PyTorch
 * ({@code python3-torch}): found in this checkout, run to its end, its last line (one JSON object)
 * its result. A missing script, Python or PyTorch is an error saying what to install.
 */
public final class PythonScript {
    private PythonScript() {
    }

    /**
     * A file shipped with this checkout ({@code relative} to its root): under the launcher's
     * serene.home, else found upwards from the working directory.
     */
    public static Path shipped(final Path relative) {
        final String home = System.getProperty("serene.home");
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

    /**
     * Runs {@code python script args...} and returns its last line, a JSON object. {@code what} names
     * the caller in errors (e.g. "--baseline gloo").
     */
    public static String run(final String what, final String python, final Path script, final List<String> args,
                             final long timeoutSeconds) throws IOException, InterruptedException {
        if (!Files.isRegularFile(script)) {
            throw new IllegalArgumentException(what + ": no script at " + script);
        }
        final List<String> command = new ArrayList<>(List.of(python, script.toString()));
        command.addAll(args);
        final Process p;
        try {
            p = new ProcessBuilder(command).redirectErrorStream(true).start();
        } catch (final IOException ex) {
            throw new IllegalArgumentException(what + ": cannot run " + python + " (apt-get install python3-torch): " + ex.getMessage(), ex);
        }
        final String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(what + ": no result within " + timeoutSeconds + " s");
        }
        final String[] lines = out.strip().split("\n");
        final String last = lines.length == 0 ? "" : lines[lines.length - 1];
        if (p.exitValue() != 0 || !last.startsWith("{")) {
            if (out.contains("No module named 'torch'") || out.contains("PyTorch is not installed")) {
                throw new IllegalArgumentException(what + " needs PyTorch: apt-get install python3-torch (run with " + python + ")");
            }
            throw new IllegalStateException(what + ": " + script + " failed (exit " + p.exitValue() + "): " + out.strip());
        }
        return last;
    }
}
