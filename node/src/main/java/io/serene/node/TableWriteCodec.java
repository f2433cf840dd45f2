package io.serene.node;

import io.serene.controlplane.rpc.Update;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;
import io.serene.protocol.table.WorkerGroupEntry;

/**
 * A table write on the control service's wire ({@code Update} of serene_control.proto) and back:
 * the one encoding the client ({@link RemoteSwitchControl}) and the server ({@link SwitchControlService})
 * share. A sync config travels as its text ({@link SyncConfigParser}).
 */
public final class TableWriteCodec {
    private TableWriteCodec() {
    }

    /** The update that carries {@code write} (its job goes in the request). */
    public static Update encode(final TableWrite write) {
        final Update.Builder u = Update.newBuilder().setKind(Update.Kind.valueOf(write.kind().name()));
        if (write.entry() instanceof SyncConfigEntry e) {
            u.setTable(Update.Table.SYNC_CONFIG).setGroup(e.group()).setFirstRound(e.firstRound());
            if (e.hasValue()) {
                u.setConfig(e.config().toString());
            }
        } else {
            final WorkerGroupEntry e = (WorkerGroupEntry) write.entry();
            u.setTable(Update.Table.WORKER_GROUP).setWorker(e.worker());
            if (e.hasValue()) {
                u.setGroup(e.group());
            }
        }
        return u.build();
    }

    /** The write an update of job {@code job} carries; a bad one is an IllegalArgumentException saying why. */
    public static TableWrite decode(final int job, final Update u) {
        final TableEntry entry;
        if (u.getTable() == Update.Table.WORKER_GROUP) {
            final WorkerGroupEntry.Builder b = WorkerGroupEntry.builder().job(job).worker(u.getWorker());
            entry = (u.getKind() == Update.Kind.DELETE ? b : b.group(u.getGroup())).build();
        } else if (u.getTable() == Update.Table.SYNC_CONFIG) {
            final SyncConfigEntry.Builder b = SyncConfigEntry.builder().job(job).group(u.getGroup()).firstRound(u.getFirstRound());
            entry = (u.getKind() == Update.Kind.DELETE ? b : b.config(SyncConfigParser.parse(u.getConfig()).requireAbsolute())).build();
        } else {
            throw new IllegalArgumentException("unknown table " + u.getTableValue());
        }
        switch (u.getKind()) {
            case INSERT:
                return TableWrite.insert(entry);
            case MODIFY:
                return TableWrite.modify(entry);
            case DELETE:
                return TableWrite.delete(entry);
            case INSTALL:
                if (!(entry instanceof SyncConfigEntry)) {
                    throw new IllegalArgumentException("install writes sync_config entries only");
                }
                return TableWrite.install((SyncConfigEntry) entry);
            default:
                throw new IllegalArgumentException("unknown update kind " + u.getKindValue());
        }
    }
}
