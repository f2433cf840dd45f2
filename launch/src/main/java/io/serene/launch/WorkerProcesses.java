package io.serene.launch;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.IntPredicate;

/**
 * The worker processes of a training run: started, their output read (progress, results, the tail
 * for errors), told to evaluate, awaited, stopped. A worker that dies is recorded and the others go
 * on, unless the job cannot go on without it (the {@code needed} test: then the run ends at once);
 * if the others fail after a death, the run fails naming it; a worker killed on purpose
 * ({@link #kill}) says why. {@link #relaunch} ends them all so the run can start the job again
 * from a checkpoint (the {@code relaunchOnDeath} test asks for it when a worker dies).
 */
final class WorkerProcesses {
    private static final int KEEP_LINES = 20;
    private final Progress progress;
    private final IntPredicate needed;
    private final IntPredicate handledDeath;
    /** The workers dead now (a restarted one is alive again; {@link #failures} keeps every death). */
    private final Set<Integer> deadNow = new HashSet<>();
    /** Workers restarted and not joined yet; those ended because the others had finished training by then. */
    private final Set<Integer> rejoining = new HashSet<>();
    private final Set<Integer> cameTooLate = new HashSet<>();
    /** Why every worker is being ended for a relaunch, or null. */
    private volatile String relaunch;
    private final List<Process> processes = new ArrayList<>();
    private final List<Thread> readers = new ArrayList<>();
    private final List<ArrayDeque<String>> tails = new ArrayList<>();
    private final List<String> results = new ArrayList<>();
    private final List<Path> logs = new ArrayList<>();
    /** Per worker: why it was killed on purpose, or null. */
    private final List<String> killedFor = new ArrayList<>();
    /** The workers that died, in the order they did. */
    private final List<RunSummary.Failure> failures = new ArrayList<>();
    private final long startNs = System.nanoTime();
    private int trained;
    /** Workers that joined (printed '@joined'), and whether they were told to start. */
    private int joinedCount;
    private boolean started;
    private boolean told;

    /**
     * @param needed whether the job cannot go on without a worker (its sync config requires it, with
     *               no timeout): its death then ends the run at once, saying so
     * @param handledDeath whether the run takes care of a worker's death (it relaunches the job or
     *               restarts the worker: a restart is planned, or allowed by --max-restarts); asked
     *               before {@code needed}
     */
    WorkerProcesses(final Progress progress, final IntPredicate needed, final IntPredicate handledDeath) {
        this.progress = progress;
        this.needed = needed;
        this.handledDeath = handledDeath;
    }

    /**
     * Starts dead worker w again ({@code command}: it rejoins its job from its checkpoints); its log
     * goes on in the same file. Its death stays in {@link #failures}. Not when every other worker
     * still alive finished training already: the job has nothing left to rejoin, and the run goes on
     * to evaluate without it (false).
     */
    boolean restart(final int w, final List<String> command, final Map<String, String> env, final Path log) throws IOException {
        final Process p;
        synchronized (this) {
            // decided and started under the lock: a worker finishing training meanwhile sees it rejoining (trained())
            if (trained >= processes.size() - deadNow.size()) {
                p = null;
            } else {
                p = launch(command, env);
                processes.set(w, p);
                tails.set(w, new ArrayDeque<>());
                results.set(w, null);
                killedFor.set(w, null);
                deadNow.remove(w);
                rejoining.add(w);
            }
        }
        if (p == null) {
            progress.println("worker " + w + " is not brought back: every other worker finished training, so there is no job left to "
                + "rejoin");
            evaluateIfAllTrained();
            return false;
        }
        progress.revived(w);
        progress.println("worker " + w + " restarted (pid " + p.pid() + "): it rejoins its job from its checkpoints");
        final Thread reader = new Thread(() -> read(w, p, log, true), "worker-" + w + "-output");
        reader.setDaemon(true);
        reader.start();
        readers.set(w, reader);
        return true;
    }

    /**
     * Ends every worker at once (SIGKILL) so the job can be relaunched from a checkpoint; their
     * exits are no failures. The first reason given is kept ({@link #relaunchReason}).
     */
    void relaunch(final String reason) {
        final List<Process> all;
        synchronized (this) {
            if (relaunch != null) {
                return;
            }
            relaunch = reason;
            all = new ArrayList<>(processes);
        }
        progress.println("relaunching the job: " + reason);
        for (final Process p : all) {
            p.destroyForcibly();
        }
    }

    /** Why the workers were ended for a relaunch, or null if they were not. */
    String relaunchReason() {
        return relaunch;
    }

    /**
     * Starts worker {@code w} with extra environment variables ({@code env}: the job secret, kept off the
     * command line other users can read); everything it prints but progress markers also goes to {@code log}.
     */
    void start(final int w, final List<String> command, final Map<String, String> env, final Path log) throws IOException {
        final Process p = launch(command, env);
        synchronized (this) {
            processes.add(p);
            tails.add(new ArrayDeque<>());
            results.add(null);
            logs.add(log);
            killedFor.add(null);
        }
        final Thread reader = new Thread(() -> read(w, p, log, false), "worker-" + w + "-output");
        reader.setDaemon(true);
        reader.start();
        readers.add(reader);
    }

    /** A worker process: its output and errors on one stream, glibc told to keep the heap PyTorch frees. */
    private static Process launch(final List<String> command, final Map<String, String> env) throws IOException {
        final ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().putAll(env);
        pb.environment().put("MALLOC_MMAP_THRESHOLD_", "67108864");
        pb.environment().put("MALLOC_TRIM_THRESHOLD_", "268435456");
        return pb.start();
    }

    private void read(final int w, final Process p, final Path log, final boolean append) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
             Writer file = append ? Files.newBufferedWriter(log, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND)
                 : Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.startsWith("@")) {
                    file.write(line);
                    file.write('\n');
                    file.flush();
                }
                if (line.startsWith("@progress ")) {
                    final String[] parts = line.split(" ");
                    if (parts.length == 3) {
                        // a line cut short (the worker killed while writing it) is skipped
                        try {
                            progress.round(w, Integer.parseInt(parts[1]), Double.parseDouble(parts[2]));
                        } catch (final NumberFormatException cut) {
                            // likewise
                        }
                    }
                    continue;
                }
                if (line.equals("@joined")) {
                    joined();
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
                if (line.startsWith("worker " + w + "/")) {
                    synchronized (this) {
                        // its banner: it joined
                        rejoining.remove(w);
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
     * A worker joined its job and waits to start: once every worker did, all are told to go (a worker
     * training alone while another JVM still starts would skew every config that does not wait for all).
     */
    private void joined() {
        synchronized (this) {
            joinedCount++;
        }
        startIfAllJoined();
    }

    /** Tells every worker to start once each joined or died (a worker that died first holds nobody back). */
    private void startIfAllJoined() {
        final List<Process> all;
        synchronized (this) {
            if (joinedCount + deadNow.size() < processes.size() || started) {
                return;
            }
            started = true;
            all = new ArrayList<>(processes);
        }
        tell(all, "start");
    }

    /** Writes a line to each worker's standard input. */
    private void tell(final List<Process> all, final String line) {
        for (final Process p : all) {
            try {
                p.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
                p.getOutputStream().flush();
            } catch (final IOException ex) {
                progress.println("a worker's input is closed (" + ex.getMessage() + "); its exit says why");
            }
        }
    }

    /**
     * A worker finished training and waits to evaluate its copies of the model: once every
     * worker did, all are told to go (before that, evaluating would take a processor from a
     * worker still training).
     */
    private void trained() {
        final List<Process> late = new ArrayList<>();
        synchronized (this) {
            trained++;
            // a worker brought back that has not joined by the time every other finished training has no job to rejoin
            if (!rejoining.isEmpty() && trained + rejoining.size() >= processes.size() - deadNow.size()) {
                for (final int w : rejoining) {
                    killedFor.set(w, "back after the others finished training");
                    cameTooLate.add(w);
                    late.add(processes.get(w));
                }
                rejoining.clear();
            }
        }
        late.forEach(Process::destroyForcibly);
        evaluateIfAllTrained();
    }

    /** Once every worker still alive finished training, tells them to evaluate. */
    private void evaluateIfAllTrained() {
        final List<Process> all = new ArrayList<>();
        synchronized (this) {
            final int alive = processes.size() - deadNow.size();
            if (trained < alive || alive == 0 || told) {
                return;
            }
            told = true;
            for (int w = 0; w < processes.size(); w++) {
                if (!dead(w)) {
                    all.add(processes.get(w));
                }
            }
        }
        progress.println(String.format(Locale.ROOT, "all %d workers finished training (%.1f s after they were launched); "
            + "evaluating their copies of the model on the test set (off the clock)", all.size(), (System.nanoTime() - startNs) / 1e9));
        tell(all, "evaluate");
    }

    /**
     * Kills worker w's process now (SIGKILL), recording why; the run goes on without it.
     *
     * @param round the highest released round when it was killed
     */
    void kill(final int w, final String cause, final int round) {
        final Process p;
        synchronized (this) {
            if (w >= processes.size() || killedFor.get(w) != null || dead(w)) {
                return;
            }
            killedFor.set(w, cause + " at round " + round);
            p = processes.get(w);
        }
        progress.println("fault: killing worker " + w + " (" + cause + ", round " + round + " released)");
        p.destroyForcibly();
    }

    /**
     * Waits until every worker exited. A worker that dies is recorded (see {@link #failures}) and the
     * others go on; fails if none finished, or if a worker that was not killed on purpose failed
     * after another died (its last output and the death that came first in the message).
     */
    void awaitAll() throws InterruptedException {
        while (true) {
            boolean running = false;
            for (int w = 0; w < processes.size(); w++) {
                final Process p = processes.get(w);
                if (p.isAlive()) {
                    running = true;
                } else if (p.exitValue() != 0 && !dead(w)) {
                    readers.get(w).join(2_000);
                    died(w, p, p.exitValue());
                }
            }
            if (!running) {
                for (final Thread r : readers) {
                    r.join(5_000);
                }
                if (relaunch != null) {
                    return;
                }
                if (deadNow.size() == processes.size()) {
                    final RunSummary.Failure first = failures.get(0);
                    throw new IllegalStateException("every worker failed; the first, worker " + first.worker() + ": " + first.cause()
                        + "; its last output " + lastOutput(first.worker()));
                }
                return;
            }
            Thread.sleep(50);
        }
    }

    /**
     * Worker w's process {@code p} exited with a failure: recorded; a failure nobody caused on purpose
     * ends the run unless it is a consequence of one. Nothing if w was brought back meanwhile (a new
     * process in its place: the old one's death is already recorded).
     */
    private void died(final int w, final Process p, final int exit) {
        final String cause;
        final RunSummary.Failure earlier;
        synchronized (this) {
            if (processes.get(w) != p || deadNow.contains(w)) {
                return;
            }
            if (relaunch != null) {
                // ended for the relaunch, or died while it was under way: no failure of its own
                return;
            }
            earlier = failures.isEmpty() ? null : failures.get(0);
            cause = cameTooLate.contains(w) ? "ended: it came " + killedFor.get(w)
                : killedFor.get(w) != null ? "killed by --faults " + killedFor.get(w) : "exit " + exit;
            failures.add(new RunSummary.Failure(w, exit, cause, progress.roundOf(w)));
            deadNow.add(w);
        }
        progress.failed(w);
        startIfAllJoined();
        if (!cameTooLate.contains(w) && handledDeath.test(w)) {
            return;
        }
        if (earlier == null && needed.test(w)) {
            stop();
            throw new IllegalStateException("worker " + w + " died (" + cause + ") and the job's sync config cannot go on without it "
                + "(it needs every worker and has no timeout; a quorum, a timeout or an exclusion would let the others go on); worker " + w
                + "'s last output " + lastOutput(w));
        }
        if (killedFor.get(w) == null) {
            if (earlier == null) {
                progress.println("worker " + w + " died (" + cause + "); the others go on if the sync config lets them. Its last output "
                    + lastOutput(w));
            } else {
                stop();
                throw new IllegalStateException("worker " + w + " failed (" + cause + ") after worker " + earlier.worker() + " died ("
                    + earlier.cause() + "): the job's sync config needs it, or it could not go on without it; worker " + w
                    + "'s last output " + lastOutput(w));
            }
        } else {
            progress.println("worker " + w + " is dead (" + cause + "); the others go on if the sync config lets them");
        }
        evaluateIfAllTrained();
    }

    /** The workers that died, in order. */
    synchronized List<RunSummary.Failure> failures() {
        return List.copyOf(failures);
    }

    /** Whether worker w died. */
    synchronized boolean dead(final int w) {
        return deadNow.contains(w);
    }

    /** Why worker w died last (for a relaunch's reason), or null. */
    synchronized String causeOfDeath(final int w) {
        for (int i = failures.size() - 1; i >= 0; i--) {
            if (failures.get(i).worker() == w) {
                return failures.get(i).cause();
            }
        }
        return null;
    }

    /** "(all of it in LOG):" and the last lines worker w printed, for error messages. */
    private String lastOutput(final int w) {
        return "(all of it in " + logs.get(w) + "):\n  " + String.join("\n  ", tail(w));
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
