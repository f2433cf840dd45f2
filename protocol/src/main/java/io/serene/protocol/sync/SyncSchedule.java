package io.serene.protocol.sync;

import java.util.ArrayList;
import java.util.List;

/**
 * Sync configs over rounds: each entry applies from its first round until the next entry's.
 * The first entry starts at round 0; first rounds strictly increase.
 */
public final class SyncSchedule {
    /** One config and the first round it applies to. */
    public static final class Entry {
        public final int firstRound;
        public final SyncConfig config;

        public Entry(final int firstRound, final SyncConfig config) {
            this.firstRound = firstRound;
            this.config = config;
        }

        @Override
        public String toString() {
            return config + "@" + firstRound;
        }
    }

    private final List<Entry> entries;

    public SyncSchedule(final List<Entry> entries) {
        if (entries.isEmpty() || entries.get(0).firstRound != 0) {
            throw new IllegalArgumentException("a schedule starts at round 0, as in bsp@0,ssp:3@100");
        }
        for (final Entry entry : entries) {
            try {
                entry.config.requireAbsolute();
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException("'" + entry + "': " + ex.getMessage(), ex);
            }
        }
        for (int i = 1; i < entries.size(); i++) {
            if (entries.get(i).firstRound <= entries.get(i - 1).firstRound) {
                throw new IllegalArgumentException("schedule rounds must increase: '" + entries.get(i) + "' follows '"
                    + entries.get(i - 1) + "'");
            }
        }
        this.entries = List.copyOf(entries);
    }

    /** Parses {@code CONFIG} or {@code CONFIG@ROUND,CONFIG@ROUND,...}. */
    public static SyncSchedule parse(final String text) {
        return new SyncSchedule(SyncConfigParser.parseSchedule(text));
    }

    public List<Entry> entries() {
        return entries;
    }

    /** The config in force for a round. */
    public SyncConfig configFor(final int round) {
        SyncConfig config = entries.get(0).config;
        for (final Entry entry : entries) {
            if (entry.firstRound > round) {
                break;
            }
            config = entry.config;
        }
        return config;
    }

    /**
     * The schedule as a job whose round 0 is this schedule's round {@code base} sees it (a job
     * resumed from a checkpoint): the config in force at {@code base} from 0, later entries moved
     * back by {@code base}.
     */
    public SyncSchedule from(final int base) {
        final List<Entry> next = new ArrayList<>();
        next.add(new Entry(0, configFor(base)));
        for (final Entry entry : entries) {
            if (entry.firstRound > base) {
                next.add(new Entry(entry.firstRound - base, entry.config));
            }
        }
        return new SyncSchedule(next);
    }

    /** The same schedule with a change from {@code firstRound} on (later entries are dropped). */
    public SyncSchedule with(final int firstRound, final SyncConfig config) {
        final List<Entry> next = new ArrayList<>();
        for (final Entry entry : entries) {
            if (entry.firstRound < firstRound) {
                next.add(entry);
            }
        }
        next.add(new Entry(firstRound, config));
        return new SyncSchedule(next);
    }

    @Override
    public String toString() {
        return String.join(",", entries.stream().map(Entry::toString).toArray(String[]::new));
    }
}
