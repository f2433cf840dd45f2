package io.serene.worker;

import io.serene.protocol.ConfigPacket;
import io.serene.protocol.Flags;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncRules;

/**
 * The worker's copy of its group's config table: the entries of the newest complete epoch (a
 * table is taken once every entry of its epoch arrived), the newest epoch seen on any packet, and
 * the clearance rule over them. Preallocated; the engine's thread only.
 */
final class ConfigReplica {
    /** Most entries of a config table (the switch keeps eight). */
    static final int MAX_ENTRIES = 64;

    private final int[] first = new int[MAX_ENTRIES];
    private final int[] bound = new int[MAX_ENTRIES];
    private final LateMode[] late = new LateMode[MAX_ENTRIES];
    private final boolean[] busy = new boolean[MAX_ENTRIES];
    private final long[] timeout = new long[MAX_ENTRIES];
    private int count;
    private int knownEpoch = -1;
    private int seenEpoch;
    private final int[] pendingFirst = new int[MAX_ENTRIES];
    private final int[] pendingBound = new int[MAX_ENTRIES];
    private final LateMode[] pendingLate = new LateMode[MAX_ENTRIES];
    private final boolean[] pendingBusy = new boolean[MAX_ENTRIES];
    private final long[] pendingTimeout = new long[MAX_ENTRIES];
    private int pendingEpoch = -1;
    private long pendingMask;
    private long requestAtNs;

    /** The epoch of the table held, -1 before the first. */
    int knownEpoch() {
        return knownEpoch;
    }

    int seenEpoch() {
        return seenEpoch;
    }

    /** Notes an epoch stamped on a packet (a newer table exists if it is above the one held). */
    void seen(final int epoch) {
        seenEpoch = Math.max(seenEpoch, epoch);
    }

    /** Whether a CONFIG_REQUEST may go out now (the caller asks only while the table is not fresh). */
    boolean requestDue(final long nowNs) {
        return nowNs >= requestAtNs;
    }

    /** A CONFIG_REQUEST went out now; the next may follow {@code retryNs} later. */
    void requested(final long nowNs, final long retryNs) {
        requestAtNs = nowNs + retryNs;
    }

    long requestAtNs() {
        return requestAtNs;
    }

    /** Whether the table held is the newest seen. */
    boolean fresh() {
        return knownEpoch >= 0 && knownEpoch >= seenEpoch;
    }

    /**
     * One CONFIG packet: an entry of an epoch's table. Returns false for a malformed one (entry
     * count or index out of range, unknown late mode); true otherwise, whether it completed a table or not.
     */
    boolean onConfig(final ConfigPacket in) {
        final int epoch = in.configEpoch();
        seen(epoch);
        if (epoch <= knownEpoch) {
            return true;
        }
        final int entries = in.elementCount();
        final int index = in.chunk();
        if (entries < 1 || entries > MAX_ENTRIES || index >= entries || !LateMode.isWireCode(in.lateMode())) {
            return false;
        }
        if (epoch != pendingEpoch) {
            pendingEpoch = epoch;
            pendingMask = 0;
        }
        pendingFirst[index] = in.firstRound();
        pendingBound[index] = in.bound();
        pendingLate[index] = LateMode.fromWireCode(in.lateMode());
        pendingBusy[index] = in.hasFlag(Flags.BUSY);
        pendingTimeout[index] = in.timeoutNs();
        pendingMask |= 1L << index;
        if (pendingMask == (entries == 64 ? -1L : (1L << entries) - 1)) {
            System.arraycopy(pendingFirst, 0, first, 0, entries);
            System.arraycopy(pendingBound, 0, bound, 0, entries);
            System.arraycopy(pendingLate, 0, late, 0, entries);
            System.arraycopy(pendingBusy, 0, busy, 0, entries);
            System.arraycopy(pendingTimeout, 0, timeout, 0, entries);
            count = entries;
            knownEpoch = epoch;
            return true;
        }
        return true;
    }

    /** Whether the last {@link #onConfig} completed a new table. */
    boolean justCompleted(final int epochBefore) {
        return knownEpoch != epochBefore;
    }

    private int entryFor(final int round) {
        return SyncRules.entryFor(first, 0, 0, count, MAX_ENTRIES, round);
    }

    /** The bound in force for a round ({@link SyncConfig#UNBOUNDED} before a table is known). */
    int boundFor(final int round) {
        return count == 0 ? SyncConfig.UNBOUNDED : bound[entryFor(round)];
    }

    /** The late mode in force for a round (fold before a table is known). */
    LateMode lateModeFor(final int round) {
        return count == 0 ? LateMode.FOLD : late[entryFor(round)];
    }

    /** The timeout in force for a round, resolved by the switch ({@link SyncConfig#NO_TIMEOUT} before a table is known, or none). */
    long timeoutNsFor(final int round) {
        return count == 0 ? SyncConfig.NO_TIMEOUT : timeout[entryFor(round)];
    }

    /** Whether the round is WBSP's: the worker keeps computing while it waits for clearance (false before a table is known). */
    boolean busyFor(final int round) {
        return count != 0 && busy[entryFor(round)];
    }

    /**
     * The config in force for a round in words, as a client of the worker sees it: "bound B" (ssp,
     * "bound 0" for BSP, "unbounded" for ASP), then "timeout T ms", "late: drop", "busy" where they
     * apply, and the table's epoch; "no config table yet" before the first.
     */
    String describe(final int round) {
        if (count == 0) {
            return "no config table yet";
        }
        final int e = entryFor(round);
        final StringBuilder sb = new StringBuilder(bound[e] == SyncConfig.UNBOUNDED ? "unbounded" : "bound " + bound[e]);
        if (timeout[e] != SyncConfig.NO_TIMEOUT) {
            sb.append(", timeout ").append(timeout[e] / 1_000_000.0).append(" ms");
        }
        sb.append(", late: ").append(late[e].name().toLowerCase(java.util.Locale.ROOT));
        if (busy[e]) {
            sb.append(", busy");
        }
        return sb.append(" (epoch ").append(knownEpoch).append(')').toString();
    }

    /** Whether a worker may start a round: a current table, and the bound rule with R as last heard. */
    boolean cleared(final int round, final int releasedRound, final int ring) {
        return fresh() && SyncRules.mayStart(round, releasedRound, bound[entryFor(round)], ring);
    }
}
