package io.serene.protocol.table;

import java.util.Objects;

/** One write to a switch table: insert, modify, delete or install (hot-swap) an entry. Immutable. */
public final class TableWrite {
    /** What a write does (as P4Runtime's update types). */
    public enum Kind {
        /** Adds an entry; DUPLICATE_ENTRY if its key is taken. */
        INSERT,
        /** Replaces the value of an existing entry; NOT_FOUND if there is none. */
        MODIFY,
        /** Removes an entry; NOT_FOUND if there is none. */
        DELETE,
        /**
         * The hot-swap write, {@code sync_config} only: the entry's config applies from its first
         * round on, replacing any entry of its group that starts at or after it (rounds before it
         * keep theirs); TOO_EARLY below the earliest round a change may name.
         */
        INSTALL
    }

    private final Kind kind;
    private final TableEntry entry;

    private TableWrite(final Kind kind, final TableEntry entry) {
        this.kind = Objects.requireNonNull(kind);
        this.entry = Objects.requireNonNull(entry);
        if (kind != Kind.DELETE && !entry.hasValue()) {
            throw new IllegalArgumentException(kind + " needs a value: " + entry);
        }
    }

    public static TableWrite insert(final TableEntry entry) {
        return new TableWrite(Kind.INSERT, entry);
    }

    public static TableWrite modify(final TableEntry entry) {
        return new TableWrite(Kind.MODIFY, entry);
    }

    public static TableWrite delete(final TableEntry key) {
        return new TableWrite(Kind.DELETE, key.key());
    }

    /** The hot-swap write of a sync_config entry ({@link Kind#INSTALL}). */
    public static TableWrite install(final SyncConfigEntry entry) {
        return new TableWrite(Kind.INSTALL, entry);
    }

    /**
     * The same write with its sync_config entry moved to first round {@code firstRound} (a
     * worker_group write has no first round: returned as it is).
     */
    public TableWrite atFirstRound(final int firstRound) {
        if (!(entry instanceof SyncConfigEntry e) || e.firstRound() == firstRound) {
            return this;
        }
        return new TableWrite(kind, e.toBuilder().firstRound(firstRound).build());
    }

    public Kind kind() {
        return kind;
    }

    /** A {@link SyncConfigEntry} or a {@link WorkerGroupEntry}. */
    public TableEntry entry() {
        return entry;
    }

    @Override
    public boolean equals(final Object o) {
        return o instanceof TableWrite && ((TableWrite) o).kind == kind && ((TableWrite) o).entry.equals(entry);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, entry);
    }

    @Override
    public String toString() {
        return kind + " " + entry;
    }
}
