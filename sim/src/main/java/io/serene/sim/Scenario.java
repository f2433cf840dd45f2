package io.serene.sim;

import io.serene.controlplane.Policy;
import io.serene.dataplane.SwitchContext;
import io.serene.protocol.sync.SyncSchedule;

import java.util.BitSet;
import java.util.List;

/** What {@link ScenarioRunner} simulates; fluent setters, checked by {@link #validate()}. */
public final class Scenario {
    int workers = 16;
    int rounds = 100;
    SyncSchedule schedule = SyncSchedule.parse("bsp");
    String stragglers = "none";
    long seed = 1;
    int elements = 512;
    int chunkElements = 256;
    long computeNs = 10_000_000L;
    double computeJitter = 0.05;
    long latencyNs = 50_000L;
    long jitterNs = 10_000L;
    double loss;
    double duplication;
    double reordering;
    int randomSwaps;
    boolean keyed;
    Policy policy;
    int[] groups;
    long timeLimitNs = 24L * 3600 * 1_000_000_000L;

    public Scenario workers(final int n) {
        workers = n;
        return this;
    }

    public Scenario rounds(final int n) {
        rounds = n;
        return this;
    }

    public Scenario schedule(final SyncSchedule s) {
        schedule = s;
        return this;
    }

    public Scenario stragglers(final String profile) {
        stragglers = profile;
        return this;
    }

    public Scenario seed(final long s) {
        seed = s;
        return this;
    }

    public Scenario elements(final int n) {
        elements = n;
        return this;
    }

    public Scenario chunkElements(final int k) {
        chunkElements = k;
        return this;
    }

    /** Mean compute time of one round on an unslowed worker (virtual nanoseconds). */
    public Scenario computeNs(final long ns) {
        computeNs = ns;
        return this;
    }

    public Scenario latencyNs(final long ns) {
        latencyNs = ns;
        return this;
    }

    public Scenario faults(final double lossRate, final double duplicationRate, final double reorderRate) {
        loss = lossRate;
        duplication = duplicationRate;
        reordering = reorderRate;
        return this;
    }

    /**
     * Whether the job has a secret: every packet then carries its sender's MAC and number, and the
     * switch and the workers check them and their replay windows (under loss, duplication and
     * reordering as the faults say). Default: no secret.
     */
    public Scenario keyed(final boolean value) {
        keyed = value;
        return this;
    }

    /** A policy whose controller changes the config while the job runs (replaces the schedule). */
    public Scenario policy(final Policy p) {
        policy = p;
        if (p != null) {
            schedule = new SyncSchedule(List.of(new SyncSchedule.Entry(0, p.start())));
        }
        return this;
    }

    /**
     * Worker groups (the switch's worker_group table): worker w in group {@code groupOf[w]}, 0..3;
     * workers past the array in group 0. Every group starts with the schedule; a policy's groups
     * replace these.
     */
    public Scenario groups(final int... groupOf) {
        groups = groupOf.clone();
        return this;
    }

    /** Each worker's group: the policy's, else {@link #groups}, else all 0. */
    int[] groupOf() {
        if (policy != null) {
            return policy.groupOf(workers);
        }
        final int[] of = new int[workers];
        if (groups != null) {
            System.arraycopy(groups, 0, of, 0, Math.min(workers, groups.length));
        }
        return of;
    }

    /** Each group's members (index = group, 0..3). */
    BitSet[] members() {
        final int[] of = groupOf();
        final BitSet[] members = new BitSet[4];
        for (int g = 0; g < members.length; g++) {
            members[g] = new BitSet();
        }
        for (int w = 0; w < workers; w++) {
            require(of[w] >= 0 && of[w] < members.length, "worker groups are 0..3, was " + of[w]);
            members[of[w]].set(w);
        }
        return members;
    }

    /** Besides the schedule, this many config changes at random times to random configs (for tests). */
    public Scenario randomSwaps(final int n) {
        randomSwaps = n;
        return this;
    }

    void validate() {
        require(workers >= 1 && workers <= SwitchContext.MAX_WORKERS, "--workers must be in 1.." + SwitchContext.MAX_WORKERS
            + ", was " + workers);
        require(rounds >= 1, "--rounds must be >= 1, was " + rounds);
        require(elements >= 1, "--elements must be >= 1, was " + elements);
        require(computeNs >= 1, "compute time must be > 0");
        require(loss >= 0 && loss < 0.5, "--loss must be in [0, 0.5), was " + loss);
        final BitSet[] members = members();
        for (final SyncSchedule.Entry entry : schedule.entries()) {
            entry.config.resolve(workers);
            for (int g = 1; g < members.length && policy == null; g++) {
                try {
                    entry.config.resolve(workers, members[g]);
                } catch (final IllegalArgumentException ex) {
                    throw new IllegalArgumentException("'" + entry.config + "' does not fit group " + g + ": " + ex.getMessage(), ex);
                }
            }
        }
    }

    private static void require(final boolean ok, final String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
