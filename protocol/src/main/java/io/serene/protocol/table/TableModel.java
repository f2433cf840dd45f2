package io.serene.protocol.table;

/**
 * The shape of the switch's tables that both sides of a table write must agree on: the table
 * names and their capacities. The switch's full schema (fields, registers, counters) is built
 * from these in the data plane; the control plane compiles policies against them.
 */
public final class TableModel {
    /** The sync-config table's name. */
    public static final String SYNC_CONFIG = "sync_config";
    /** The worker-to-group table's name. */
    public static final String WORKER_GROUP = "worker_group";
    /** Worker groups per job, the default group 0 included. */
    public static final int GROUPS = 4;
    /** Entries of one group's sync_config list. */
    public static final int ENTRIES = 8;

    private TableModel() {
    }
}
