package io.serene.harness.experiment;

import io.serene.controlplane.Policy;

import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One policy of the matrix: a sync config or schedule, or a policy file. */
final class PolicyRef {
    /** {@code N} or {@code N-K} in a preset: the worker count (less K). */
    private static final Pattern WORKER_COUNT = Pattern.compile("\\bN(?:-([0-9]{1,6}))?\\b");

    /** The name of the PyTorch DDP baseline in a file's policies. */
    static final String DDP = "ddp";
    /** PyTorch DDP with its buckets through Serene's switch under a sync config: {@code ddp-hook:CONFIG}. */
    static final String DDP_HOOK = "ddp-hook:";

    public final String name;
    final String sync;
    final Path file;
    final Policy policy;

    PolicyRef(final String name, final String sync, final Path file, final Policy policy) {
        this.name = name;
        this.sync = sync;
        this.file = file;
        this.policy = policy;
    }

    boolean isBsp() {
        return !isDdp() && policy == null && sync.equals("bsp");
    }

    /** PyTorch DDP instead of Serene's training loop: {@link io.serene.launch.DdpBaseline} (its settings: BSP's). */
    boolean isDdp() {
        return (name.equals(DDP) || name.startsWith(DDP_HOOK)) && policy == null && file == null;
    }

    /** For a {@code ddp-hook:} row, the sync config its switch holds with {@code workers} workers; null for DDP over gloo. */
    String hookSyncFor(final int workers) {
        return isDdp() && name.startsWith(DDP_HOOK) ? syncFor(workers) : null;
    }

    /**
     * The sync config or schedule for a scenario of {@code workers} workers: {@code N} stands for
     * the worker count and {@code N-K} for K fewer ({@code fastest:N-1} is fastest-3 of 4 and
     * fastest-7 of 8).
     */
    String syncFor(final int workers) {
        final Matcher m = WORKER_COUNT.matcher(sync);
        final StringBuilder out = new StringBuilder();
        while (m.find()) {
            final int value = workers - (m.group(1) == null ? 0 : Integer.parseInt(m.group(1)));
            if (value < 1) {
                throw new IllegalArgumentException("with " + workers + " workers " + m.group() + " is " + value + ", must be at least 1");
            }
            m.appendReplacement(out, Integer.toString(value));
        }
        m.appendTail(out);
        return out.toString();
    }
}
