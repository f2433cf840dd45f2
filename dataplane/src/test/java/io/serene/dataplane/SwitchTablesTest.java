package io.serene.dataplane;

import io.serene.protocol.JoinPacket;
import io.serene.protocol.Outbox;
import io.serene.protocol.Packet;
import io.serene.protocol.PacketHeader;
import io.serene.protocol.PacketType;
import io.serene.protocol.Status;
import io.serene.protocol.sync.SyncConfig;
import io.serene.protocol.sync.SyncConfigParser;
import io.serene.protocol.table.SyncConfigEntry;
import io.serene.protocol.table.TableEntry;
import io.serene.protocol.table.TableWrite;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The sync_config table through its schema, entries, result codes and the single-writer command queue. */
class SwitchTablesTest {
    private static final int JOB = 5;
    private final List<Integer> configPackets = new ArrayList<>();
    private final Outbox outbox = (port, buffer, offset, length) -> {
        if (new PacketHeader().wrap(buffer, offset, length).type() == PacketType.CONFIG) {
            configPackets.add(port);
        }
    };
    private final SwitchContext context = new SwitchContext().budgetBytes(1 << 20).maxJobs(2).maxWorkers(8).chunkElements(4)
        .maxPoolSize(16).roundRing(4).defaultSync(SyncConfig.bsp()).conclude();
    private final SwitchPipeline pipeline = new SwitchPipeline(context, ex -> {
        throw new AssertionError(ex);
    });

    private void join(final int workers) {
        for (int w = 0; w < workers; w++) {
            final ByteBuffer b = Packet.allocate(JoinPacket.LENGTH);
            new JoinPacket().wrap(b, 0, JoinPacket.LENGTH).initHeader(PacketType.JOIN).jobId(JOB)
                .workerId(w).workerCount(workers).elementsPerRound(8);
            pipeline.onPacket(100 + w, b, 0, JoinPacket.LENGTH, 0, outbox);
        }
    }

    private static SyncConfigEntry entry(final int first, final String config) {
        return SyncConfigEntry.builder().job(JOB).firstRound(first).config(SyncConfigParser.parse(config)).build();
    }

    @Test
    void entriesAreValuesWithReadableText() {
        final SyncConfigEntry a = entry(40, "ssp:2");
        assertThat(a).isEqualTo(entry(40, "ssp:2")).hasSameHashCodeAs(entry(40, "ssp:2"));
        assertThat(a).isNotEqualTo(entry(41, "ssp:2")).isNotEqualTo(entry(40, "ssp:3"));
        assertThat(a.toString()).isEqualTo("sync_config{job=5, first_round=40} -> ssp:2");
        assertThat(a.toBuilder().firstRound(50).build().firstRound()).isEqualTo(50);
        assertThat(TableWrite.delete(a).toString()).isEqualTo("DELETE sync_config{job=5, first_round=40}");
        assertThatThrownBy(() -> TableWrite.insert(SyncConfigEntry.builder().job(JOB).build())).hasMessageContaining("needs a value");
        assertThatThrownBy(() -> SyncConfigEntry.builder().firstRound(-1).build()).hasMessageContaining(">= 0");
    }

    @Test
    void installIsTheHotSwapWriteAndInstallConfigGoesThroughIt() {
        join(4);
        assertThat(pipeline.write(TableWrite.insert(entry(20, "ssp:2")))).isEqualTo(Status.OK);
        assertThat(pipeline.write(TableWrite.insert(entry(30, "ssp:3")))).isEqualTo(Status.OK);
        // an install at 25 replaces the entry at 30 and keeps the one at 20
        assertThat(pipeline.write(TableWrite.install(entry(25, "fastest:3")))).isEqualTo(Status.OK);
        assertThat(pipeline.entries(JOB)).containsExactly(entry(0, "bsp"), entry(20, "ssp:2"), entry(25, "fastest:3"));
        assertThat(pipeline.write(TableWrite.install(entry(0, "asp")))).as("round 0 may have started").isEqualTo(Status.TOO_EARLY);
        assertThat(pipeline.installConfig(JOB, 0, 22, SyncConfigParser.parse("ssp:1"))).isEqualTo(Status.OK);
        assertThat(pipeline.entries(JOB)).containsExactly(entry(0, "bsp"), entry(20, "ssp:2"), entry(22, "ssp:1"));
        assertThat(pipeline.installConfig(JOB, 0, -1, SyncConfig.bsp())).isEqualTo(Status.TOO_EARLY);
        assertThat(pipeline.installConfig(JOB, 9, 40, SyncConfig.bsp())).isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.installConfig(JOB + 1, 0, 40, SyncConfig.bsp())).isEqualTo(Status.UNKNOWN_JOB);
        assertThat(pipeline.write(TableWrite.install(entry(40, "exclude:7")))).as("no worker 7 in 4").isEqualTo(Status.BAD_KEY);
    }

    @Test
    void writesReturnResultCodes() {
        assertThat(pipeline.write(TableWrite.insert(entry(10, "ssp:2")))).isEqualTo(Status.UNKNOWN_JOB);
        join(4);
        final int earliest = pipeline.earliestSwapRound(JOB);
        assertThat(pipeline.write(TableWrite.insert(entry(0, "ssp:2")))).as("round 0 may have started").isEqualTo(Status.TOO_EARLY);
        assertThat(pipeline.write(TableWrite.insert(entry(20, "ssp:2")))).isEqualTo(Status.OK);
        assertThat(pipeline.write(TableWrite.insert(entry(20, "asp")))).isEqualTo(Status.DUPLICATE_ENTRY);
        assertThat(pipeline.write(TableWrite.insert(entry(10, "fastest:3")))).as("in round order, before 20").isEqualTo(Status.OK);
        assertThat(pipeline.write(TableWrite.insert(entry(30, "exclude:7")))).as("no worker 7 in 4").isEqualTo(Status.BAD_KEY);
        assertThat(pipeline.write(TableWrite.modify(entry(25, "asp")))).isEqualTo(Status.NOT_FOUND);
        assertThat(pipeline.write(TableWrite.modify(entry(20, "ssp:3+timeout:50")))).isEqualTo(Status.OK);
        assertThat(pipeline.write(TableWrite.delete(entry(15, "bsp")))).isEqualTo(Status.NOT_FOUND);
        assertThat(pipeline.entries(JOB)).containsExactly(entry(0, "bsp"), entry(10, "fastest:3"), entry(20, "ssp:3+timeout:50"));
        assertThat(pipeline.write(TableWrite.delete(entry(10, "bsp")))).isEqualTo(Status.OK);
        assertThat(pipeline.entries(JOB)).containsExactly(entry(0, "bsp"), entry(20, "ssp:3+timeout:50"));
        assertThat(pipeline.configEpoch(JOB)).as("one bump per write that took").isEqualTo(4);
        assertThat(earliest).isPositive();
        // the table holds ENTRIES entries per job
        for (int i = 0; i < ConfigTable.ENTRIES - 2; i++) {
            assertThat(pipeline.write(TableWrite.insert(entry(100 + i, "bsp")))).isEqualTo(Status.OK);
        }
        assertThat(pipeline.write(TableWrite.insert(entry(200, "bsp")))).isEqualTo(Status.TABLE_FULL);
        // the switch announces the new table to every worker
        configPackets.clear();
        pipeline.onTimer(0, outbox);
        assertThat(configPackets).contains(100, 101, 102, 103);
    }

    @Test
    void theOldestEntryCannotBeDeleted() {
        join(2);
        final SwitchContext c = context;
        assertThat(c.maxJobs()).isEqualTo(2);
        // the oldest entry covers every round before the next; deleting it would leave rounds without a rule
        assertThat(pipeline.write(TableWrite.insert(entry(30, "ssp:1")))).isEqualTo(Status.OK);
        assertThat(((SyncConfigEntry) pipeline.entries(JOB).get(0)).firstRound()).isZero();
        assertThat(pipeline.write(TableWrite.delete(SyncConfigEntry.builder().job(JOB).firstRound(0).build())))
            .as("round 0 is below the earliest swap round anyway").isEqualTo(Status.TOO_EARLY);
    }

    @Test
    void otherThreadsWriteAndReadThroughTheCommandQueueRunOnTheSwitchThread() throws Exception {
        join(2);
        final List<Runnable> wakeups = new ArrayList<>();
        pipeline.commands().wakeup(() -> wakeups.add(() -> { }));
        final CompletableFuture<Status> write = CompletableFuture.supplyAsync(() -> pipeline.commands().write(
            TableWrite.insert(entry(40, "ssp:2")))).thenCompose(f -> f);
        final CompletableFuture<Status> duplicate = write.thenCompose(s -> pipeline.commands().write(TableWrite.insert(entry(40, "asp"))));
        // nothing runs until the switch thread drains the queue (here: the test thread calls onTimer)
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!duplicate.isDone() && System.nanoTime() < deadline) {
            pipeline.onTimer(0, outbox);
            Thread.sleep(1);
        }
        assertThat(write.get()).isEqualTo(Status.OK);
        assertThat(duplicate.get()).isEqualTo(Status.DUPLICATE_ENTRY);
        assertThat(wakeups).as("each submit wakes the switch thread").hasSize(2);
        final CompletableFuture<List<TableEntry>> read = pipeline.commands().readEntries(JOB);
        assertThat(read).isNotDone();
        pipeline.onTimer(0, outbox);
        assertThat(read.get()).containsExactly(entry(0, "bsp"), entry(40, "ssp:2"));
        final CompletableFuture<Integer> failing = pipeline.commands().submit(p -> {
            throw new IllegalStateException("boom");
        });
        pipeline.onTimer(0, outbox);
        assertThat(failing).isCompletedExceptionally();
    }

    @Test
    void theSchemaDescribesTablesRegistersAndCounters() {
        final TableSchema schema = TableSchema.of(context);
        assertThat(schema.tables).hasSize(2);
        final TableSchema.Table t = schema.tables.get(0);
        assertThat(t.name).isEqualTo("sync_config");
        assertThat(t.key).extracting(f -> f.name).containsExactly("job", "group", "first_round");
        assertThat(t.value).extracting(f -> f.name).containsExactly("bound", "required", "quorum", "timeout_ns", "late");
        assertThat(t.capacity).startsWith(ConfigTable.ENTRIES + " per group x 4 groups x 2 jobs");
        final TableSchema.Table groups = schema.tables.get(1);
        assertThat(groups.name).isEqualTo("worker_group");
        assertThat(groups.key).extracting(f -> f.name).containsExactly("job", "worker");
        assertThat(groups.value).extracting(f -> f.name).containsExactly("group");
        assertThat(schema.registers).extracting(r -> r.name)
            .contains("released_round", "release_ns", "config_epoch", "earliest_swap_round", "clock", "group_members", "compute_ns",
                "finished_round", "finished_compute_ns", "finished_offset_ns");
        assertThat(schema.counters).hasSize(SwitchCounter.values().length).contains("drop_late", "partial_releases");
        assertThat(schema.describe()).contains("table sync_config", "table worker_group", "bitmap[8]", "DUPLICATE_ENTRY", "register clock");
    }
}
