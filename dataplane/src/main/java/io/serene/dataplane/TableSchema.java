package io.serene.dataplane;

import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableModel;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What the switch exposes to a control plane, as a P4Info does for a P4 program: its tables (keys,
 * values, capacity, the writes they take), its registers (readable per-job and per-worker state)
 * and its counters. Writes go through {@link SwitchCommands}; entries are {@link SyncConfigEntry}.
 */
public final class TableSchema {
    /** The sync-config table's name. */
    public static final String SYNC_CONFIG = TableModel.SYNC_CONFIG;
    /** The worker-to-group table's name. */
    public static final String WORKER_GROUP = TableModel.WORKER_GROUP;

    /** A field of a key or value: name, type, meaning. */
    public static final class Field {
        public final String name;
        public final String type;
        public final String meaning;

        Field(final String name, final String type, final String meaning) {
            this.name = name;
            this.type = type;
            this.meaning = meaning;
        }

        @Override
        public String toString() {
            return name + ": " + type;
        }
    }

    /** A table: exact-match key, value, capacity and the writes it accepts. */
    public static final class Table {
        public final String name;
        public final List<Field> key;
        public final List<Field> value;
        public final String capacity;
        public final String writes;

        Table(final String name, final List<Field> key, final List<Field> value, final String capacity, final String writes) {
            this.name = name;
            this.key = List.copyOf(key);
            this.value = List.copyOf(value);
            this.capacity = capacity;
            this.writes = writes;
        }
    }

    /** A readable register array. */
    public static final class Register {
        public final String name;
        public final String index;
        public final String type;
        public final String meaning;

        Register(final String name, final String index, final String type, final String meaning) {
            this.name = name;
            this.index = index;
            this.type = type;
            this.meaning = meaning;
        }
    }

    public final List<Table> tables;
    public final List<Register> registers;
    public final List<String> counters;

    private TableSchema(final List<Table> tables, final List<Register> registers, final List<String> counters) {
        this.tables = List.copyOf(tables);
        this.registers = List.copyOf(registers);
        this.counters = List.copyOf(counters);
    }

    /** The schema of a switch built from {@code context} (capacities from its limits). */
    public static TableSchema of(final SwitchContext context) {
        final List<Table> tables = List.of(new Table(SYNC_CONFIG,
            List.of(new Field("job", "u32", "job id"),
                new Field("group", "u8 < " + ConfigTable.GROUPS, "worker group (worker_group); 0 holds every worker without an entry"),
                new Field("first_round", "u32", "the first round the entry is in force for (until the group's next entry's)")),
            List.of(new Field("bound", "u32 | unbounded", "s: a worker of the group may start round c once R >= c - s - 1"),
                new Field("required", "bitmap[" + context.maxWorkers() + "]", "workers every release waits for (of the group's members)"),
                new Field("quorum", "u16", "contributors of the group a release needs at least"),
                new Field("timeout_ns", "u64 | none", "the group's condition holds this long after a chunk's first contribution"),
                new Field("late", "drop | fold", "what a worker of the group does with a contribution that missed its release")),
            ConfigTable.ENTRIES + " per group x " + ConfigTable.GROUPS + " groups x " + context.maxJobs()
                + " jobs (entries whose rounds are all released are freed)",
            "INSERT, MODIFY, DELETE with first_round >= earliest_swap_round; results OK, UNKNOWN_JOB, TOO_EARLY, "
                + "DUPLICATE_ENTRY, NOT_FOUND, BAD_KEY, TABLE_FULL"),
            new Table(WORKER_GROUP,
                List.of(new Field("job", "u32", "job id"), new Field("worker", "u16", "worker id")),
                List.of(new Field("group", "u8 < " + ConfigTable.GROUPS, "the group whose sync_config entries apply to the worker")),
                context.maxWorkers() + " per job x " + context.maxJobs() + " jobs (a worker without an entry is in group 0)",
                "INSERT, MODIFY, DELETE until a worker of the job contributed (TOO_EARLY after); results OK, UNKNOWN_JOB, "
                    + "TOO_EARLY, DUPLICATE_ENTRY, NOT_FOUND, BAD_KEY"));
        final List<Register> registers = List.of(
            new Register("released_round", "[job]", "i32", "R: every round up to it is released (-1: none)"),
            new Register("release_ns", "[job][round mod G]", "u64", "when R passed each of its last G rounds (the switch's clock)"),
            new Register("config_epoch", "[job]", "u32", "bumped by every write to the job's sync_config entries"),
            new Register("earliest_swap_round", "[job]", "i32", "the first round a write may name"),
            new Register("clock", "[job][worker]", "i32", "the highest round the worker contributed to"),
            new Register("group_members", "[job][group]", "bitmap", "the workers of each group (from worker_group)"),
            new Register("compute_ns", "[job][worker]", "u64", "the worker's last compute time, reported or estimated"),
            new Register("finished_round", "[job][worker]", "i32", "the worker's round before its newest (-1: none yet)"),
            new Register("finished_compute_ns", "[job][worker]", "u64", "the worker's compute time in its finished round"),
            new Register("finished_offset_ns", "[job][worker]", "u64",
                "the most any of its packets of its finished round came after the first packet of the same step"));
        final List<String> counters = new ArrayList<>();
        for (final SwitchCounter c : SwitchCounter.values()) {
            counters.add(c.name().toLowerCase(Locale.ROOT));
        }
        return new TableSchema(tables, registers, counters);
    }

    /** The schema as text, one table, register or counter list per block. */
    public String describe() {
        final StringBuilder sb = new StringBuilder();
        for (final Table t : tables) {
            sb.append("table ").append(t.name).append('\n');
            t.key.forEach(f -> sb.append(String.format(Locale.ROOT, "  key    %-12s %-18s %s%n", f.name, f.type, f.meaning)));
            t.value.forEach(f -> sb.append(String.format(Locale.ROOT, "  value  %-12s %-18s %s%n", f.name, f.type, f.meaning)));
            sb.append("  size   ").append(t.capacity).append('\n');
            sb.append("  writes ").append(t.writes).append('\n');
        }
        for (final Register r : registers) {
            sb.append(String.format(Locale.ROOT, "register %-20s %-14s %-4s %s%n", r.name, r.index, r.type, r.meaning));
        }
        sb.append("counters ").append(String.join(", ", counters)).append('\n');
        return sb.toString();
    }
}
