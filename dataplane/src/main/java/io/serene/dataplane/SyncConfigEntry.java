package io.serene.dataplane;

import io.serene.protocol.SyncConfig;

import java.util.Objects;

/**
 * One entry of the switch's {@code sync_config} table (see {@link TableSchema}): key (job, first
 * round), value a sync config, in force from its first round until the next entry's. Immutable.
 */
public final class SyncConfigEntry {
    private final int job;
    private final int firstRound;
    private final SyncConfig config;

    private SyncConfigEntry(final Builder b) {
        if (b.firstRound < 0) {
            throw new IllegalArgumentException("first round must be >= 0, was " + b.firstRound);
        }
        this.job = b.job;
        this.firstRound = b.firstRound;
        this.config = b.config;
    }

    public static Builder builder() {
        return new Builder();
    }

    public int job() {
        return job;
    }

    public int firstRound() {
        return firstRound;
    }

    /** The value; null in a delete's key-only entry. */
    public SyncConfig config() {
        return config;
    }

    public Builder toBuilder() {
        return new Builder().job(job).firstRound(firstRound).config(config);
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
        return job == e.job && firstRound == e.firstRound && Objects.equals(config, e.config);
    }

    @Override
    public int hashCode() {
        return Objects.hash(job, firstRound, config);
    }

    /** {@code sync_config{job=1, first_round=40} -> ssp:2+exclude:3}. */
    @Override
    public String toString() {
        return TableSchema.SYNC_CONFIG + "{job=" + job + ", first_round=" + firstRound + "}" + (config == null ? "" : " -> " + config);
    }

    /** Builds entries; job and first round default to 0, the config to none (a key). */
    public static final class Builder {
        private int job;
        private int firstRound;
        private SyncConfig config;

        public Builder job(final int job) {
            this.job = job;
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
