package io.serene.harness.launch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/** The worker processes of a training run: started, their output read (progress, results, the tail for errors), told to evaluate, awaited, stopped. */
final class WorkerProcesses {
    private static final int KEEP_LINES = 20;
    private final int workers;
    private final Progress progress;
    private final List<Process> processes = new ArrayList<>();
    private final List<Thread> readers = new ArrayList<>();
    private final List<ArrayDeque<String>> tails = new ArrayList<>();
    private final List<String> results = new ArrayList<>();
    private final List<Path> logs = new ArrayList<>();
    private final long startNs = System.nanoTime();
    private int trained;

    WorkerProcesses(final Progress progress, final int workers) {
        this.progress = progress;
        this.workers = workers;
    }

    /** Starts worker {@code w}; everything it prints but progress markers also goes to {@code log}. */
    void start(final int w, final List<String> command, final Path log) throws IOException {
        final ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().put("MALLOC_MMAP_THRESHOLD_", "67108864");
        pb.environment().put("MALLOC_TRIM_THRESHOLD_", "268435456");
        final Process p = pb.start();
        synchronized (this) {
            processes.add(p);
            tails.add(new ArrayDeque<>());
            results.add(null);
            logs.add(log);
        }
        final Thread reader = new Thread(() -> read(w, p, log), "worker-" + w + "-output");
        reader.setDaemon(true);
        reader.start();
        readers.add(reader);
    }

    private void read(final int w, final Process p, final Path log) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
             Writer file = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.startsWith("@")) {
                    file.write(line);
                    file.write('\n');
                    file.flush();
                }
                if (line.startsWith("@progress ")) {
                    final String[] parts = line.split(" ");
                    progress.round(w, Integer.parseInt(parts[1]), Double.parseDouble(parts[2]));
                    continue;
                }
                if (line.equals("@trained")) {
                    trained();
                    continue;
                }
                synchronized (this) {
                    final ArrayDeque<String> tail = tails.get(w);
                    tail.addLast(line);
                    if (tail.size() > KEEP_LINES) {
                        tail.removeFirst();
                    }
                    if (line.startsWith("{")) {
                        results.set(w, line);
                        continue;
                    }
                }
                if (line.startsWith("worker " + w + " round ")) {
                    progress.evaluated(w, line);
                } else if (w == 0 || !line.startsWith("worker " + w + "/")) {
                    progress.println(line);
                }
            }
        } catch (final IOException | RuntimeException ex) {
            progress.println("worker " + w + ": output unreadable: " + ex);
        }
    }

    /**
     * A worker finished training and waits to evaluate its copies of the model: once every
     * worker did, all are told to go (before that, evaluating would take a processor from a
     * worker still training).
     */
    private void trained() {
        final List<Process> all;
        synchronized (this) {
            if (++trained < workers) {
                return;
            }
            all = new ArrayList<>(processes);
        }
        progress.println(String.format(Locale.ROOT, "all %d workers finished training (%.1f s after they were launched); "
            + "evaluating their copies of the model on the test set (off the clock)", workers, (System.nanoTime() - startNs) / 1e9));
        for (final Process p : all) {
            try {
                p.getOutputStream().write("evaluate\n".getBytes(StandardCharsets.UTF_8));
                p.getOutputStream().flush();
            } catch (final IOException ex) {
                progress.println("a worker's input is closed (" + ex.getMessage() + "); its exit says why");
            }
        }
    }

    /** Waits until every worker exited; fails with the first one that exited non-zero. */
    void awaitAll() throws InterruptedException {
        while (true) {
            boolean running = false;
            for (int w = 0; w < processes.size(); w++) {
                final Process p = processes.get(w);
                if (p.isAlive()) {
                    running = true;
                } else if (p.exitValue() != 0) {
                    readers.get(w).join(2_000);
                    stop();
                    throw new IllegalStateException("worker " + w + " failed (exit " + p.exitValue() + "); its last output (all of it in "
                        + logs.get(w) + "):\n  " + String.join("\n  ", tail(w)));
                }
            }
            if (!running) {
                for (final Thread r : readers) {
                    r.join(5_000);
                }
                return;
            }
            Thread.sleep(50);
        }
    }

    synchronized List<String> tail(final int w) {
        return new ArrayList<>(tails.get(w));
    }

    synchronized String result(final int w) {
        final String r = results.get(w);
        if (r == null) {
            throw new IllegalStateException("worker " + w + " printed no result; its last output:\n  " + String.join("\n  ", tail(w)));
        }
        return r;
    }

    /** Ends every worker still running: politely, then forcibly after 3 s. */
    void stop() {
        final List<Process> all;
        synchronized (this) {
            all = new ArrayList<>(processes);
        }
        for (final Process p : all) {
            if (p.isAlive()) {
                p.destroy();
            }
        }
        for (final Process p : all) {
            try {
                if (!p.waitFor(3, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor(3, TimeUnit.SECONDS);
                }
            } catch (final InterruptedException ex) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
    }
}
