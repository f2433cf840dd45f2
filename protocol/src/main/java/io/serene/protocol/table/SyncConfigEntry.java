package io.serene.protocol.table;

import io.serene.protocol.sync.SyncConfig;

import java.util.Objects;

/**
 * One entry of the switch's {@code sync_config} table (see {@link TableModel}): key (job, worker
 * group, first round), value a sync config for the group's workers, in force from its first round
 * until the group's next entry's. Group 0 holds every worker without a {@code worker_group} entry,
 * so a job without groups uses group 0 only. Immutable.
 */
public final class SyncConfigEntry implements TableEntry {
    private final int job;
    private final int group;
    private final int firstRound;
    private final SyncConfig config;

    private SyncConfigEntry(final Builder b) {
        if (b.firstRound < 0) {
            throw new IllegalArgumentException("first round must be >= 0, was " + b.firstRound);
        }
        if (b.group < 0) {
            throw new IllegalArgumentException("group must be >= 0, was " + b.group);
        }
        this.job = b.job;
        this.group = b.group;
        this.firstRound = b.firstRound;
        this.config = b.config;
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public int job() {
        return job;
    }

    public int group() {
        return group;
    }

    public int firstRound() {
        return firstRound;
    }

    /** The value; null in a delete's key-only entry. */
    public SyncConfig config() {
        return config;
    }

    @Override
    public boolean hasValue() {
        return config != null;
    }

    @Override
    public SyncConfigEntry key() {
        return toBuilder().config(null).build();
    }

    public Builder toBuilder() {
        return new Builder().job(job).group(group).firstRound(firstRound).config(config);
    }

    @Override
    public boolean equals(final Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof SyncConfigEntry)) {
            return false;
        }
        final SyncConfigEntry e = (SyncConfigEntry) o;
        return job == e.job && group == e.group && firstRound == e.firstRound && Objects.equals(config, e.config);
    }

    @Override
    public int hashCode() {
        return Objects.hash(job, group, firstRound, config);
    }

    /** {@code sync_config{job=1, first_round=40} -> ssp:2+exclude:3}; a group other than 0 is named: {@code {job=1, group=1, ...}}. */
    @Override
    public String toString() {
        return TableModel.SYNC_CONFIG + "{job=" + job + (group == 0 ? "" : ", group=" + group) + ", first_round=" + firstRound + "}"
            + (config == null ? "" : " -> " + config);
    }

    /** Builds entries; job, group and first round default to 0, the config to none (a key). */
    public static final class Builder {
        private int job;
        private int group;
        private int firstRound;
        private SyncConfig config;

        public Builder job(final int job) {
            this.job = job;
            return this;
        }

        public Builder group(final int group) {
            this.group = group;
            return this;
        }

        public Builder firstRound(final int firstRound) {
            this.firstRound = firstRound;
            return this;
        }

        public Builder config(final SyncConfig config) {
            this.config = config;
            return this;
        }

        public SyncConfigEntry build() {
            return new SyncConfigEntry(this);
        }
    }
}
