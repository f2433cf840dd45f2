package io.serene.launch;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The host's processor load over a stretch of a run, from the kernel's counters ({@code /proc/stat}'s
 * first line: time every processor spent busy and idle): the share of processor time that was busy.
 * A run's fidelity verdict states it beside the steps that overran their modelled time.
 */
final class HostLoad {
    private static final Path STAT = Path.of("/proc/stat");

    private long busy;
    private long total;
    private long[] since;

    /** Starts a stretch (nothing happens where the kernel's counters cannot be read). */
    void begin() {
        since = sample();
    }

    /** Ends the stretch begun last, adding it to the load measured. */
    void end() {
        final long[] now = sample();
        if (since != null && now != null) {
            busy += now[0] - since[0];
            total += now[1] - since[1];
        }
        since = null;
    }

    /** The busy share of the processor time over every stretch, or null where it could not be read. */
    Double busyShare() {
        return total > 0 ? (double) busy / total : null;
    }

    /** Busy and total ticks of every processor so far, or null if /proc/stat cannot be read. */
    static long[] sample() {
        try {
            final List<String> lines = Files.readAllLines(STAT, StandardCharsets.US_ASCII);
            return lines.isEmpty() ? null : parse(lines.get(0));
        } catch (final IOException | RuntimeException ex) {
            return null;
        }
    }

    /** {@code cpu user nice system idle iowait irq softirq steal ...}: idle and iowait are idle, the rest busy. */
    static long[] parse(final String cpuLine) {
        final String[] f = cpuLine.trim().split("\\s+");
        if (!f[0].equals("cpu") || f.length < 5) {
            return null;
        }
        long all = 0;
        long idle = 0;
        // guest time is already inside user and nice (fields 9 and 10 on): counted once
        for (int i = 1; i < Math.min(f.length, 9); i++) {
            final long v = Long.parseLong(f[i]);
            all += v;
            if (i == 4 || i == 5) {
                idle += v;
            }
        }
        return new long[] {all - idle, all};
    }
}
