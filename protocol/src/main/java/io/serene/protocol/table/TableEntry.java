package io.serene.protocol.table;

/** An entry of one of the switch's tables ({@link TableModel}): {@link SyncConfigEntry} or {@link WorkerGroupEntry}. */
public interface TableEntry {
    /** The job the entry belongs to (part of every key). */
    int job();

    /** Whether the entry carries a value (a delete's key-only entry does not). */
    boolean hasValue();

    /** The same key without a value, for a delete. */
    TableEntry key();
}
