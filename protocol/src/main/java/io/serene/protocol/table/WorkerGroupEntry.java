package io.serene.protocol.table;

import java.util.Objects;

/**
 * One entry of the switch's {@code worker_group} table (see {@link TableModel}): key (job, worker),
 * value the worker's group, whose {@code sync_config} entries apply to it. A worker without an
 * entry is in group 0. Immutable.
 */
public final class WorkerGroupEntry implements TableEntry {
    /** The group of a worker without an entry. */
    public static final int DEFAULT_GROUP = 0;
    private static final int NO_GROUP = -1;

    private final int job;
    private final int worker;
    private final int group;

    private WorkerGroupEntry(final Builder b) {
        if (b.worker < 0) {
            throw new IllegalArgumentException("worker must be >= 0, was " + b.worker);
        }
        if (b.group < NO_GROUP) {
            throw new IllegalArgumentException("group must be >= 0, was " + b.group);
        }
        this.job = b.job;
        this.worker = b.worker;
        this.group = b.group;
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public int job() {
        return job;
    }

    public int worker() {
        return worker;
    }

    /** The value; meaningful only if {@link #hasValue()}. */
    public int group() {
        return group;
    }

    @Override
    public boolean hasValue() {
        return group != NO_GROUP;
    }

    @Override
    public WorkerGroupEntry key() {
        return toBuilder().noGroup().build();
    }

    public Builder toBuilder() {
        final Builder b = new Builder().job(job).worker(worker);
        b.group = group;
        return b;
    }

    @Override
    public boolean equals(final Object o) {
        if (!(o instanceof WorkerGroupEntry)) {
            return false;
        }
        final WorkerGroupEntry e = (WorkerGroupEntry) o;
        return job == e.job && worker == e.worker && group == e.group;
    }

    @Override
    public int hashCode() {
        return Objects.hash(job, worker, group);
    }

    /** {@code worker_group{job=1, worker=3} -> 1}. */
    @Override
    public String toString() {
        return TableModel.WORKER_GROUP + "{job=" + job + ", worker=" + worker + "}" + (hasValue() ? " -> " + group : "");
    }

    /** Builds entries; job, worker and group default to 0. */
    public static final class Builder {
        private int job;
        private int worker;
        private int group = DEFAULT_GROUP;

        public Builder job(final int job) {
            this.job = job;
            return this;
        }

        public Builder worker(final int worker) {
            this.worker = worker;
            return this;
        }

        public Builder group(final int group) {
            if (group < 0) {
                throw new IllegalArgumentException("group must be >= 0, was " + group);
            }
            this.group = group;
            return this;
        }

        Builder noGroup() {
            this.group = NO_GROUP;
            return this;
        }

        public WorkerGroupEntry build() {
            return new WorkerGroupEntry(this);
        }
    }
}
