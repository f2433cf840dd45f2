package io.serene.training;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A worker's checkpoint: written whole or not at all (also when its writer is killed, or several
 * write at once), read back equal, damage named, the newest kept, the newest common that reads
 * clean found.
 */
class CheckpointTest {
    private static RoundRecords.Saved records(final int n) {
        final double[] t = new double[n];
        final long[] ns = new long[n];
        final int[] k = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = 0.5 + i;
            ns[i] = 1_000L * i;
            k[i] = 32 + i;
        }
        return new RoundRecords.Saved(t, ns, ns, ns, t, t, k, k, new float[n], new boolean[n], new boolean[n], new double[n], t, 77, 0.25, ns);
    }

    private static Checkpoint checkpoint(final int worker, final int roundsDone, final Checkpoint.Held held) {
        final float[] w = {1f, -2.5f, Float.MIN_VALUE, 3e38f};
        return new Checkpoint(worker, 3, roundsDone, "--model mlp --seed 5", w, new float[] {0.1f, 0.2f, 0.3f, 0.4f}, roundsDone, 0.7f,
            12_345L, new int[] {8, 3, 3, 3, 3, 3, 3, 3, 3}, new float[] {0f, 1f, 0f, 2f}, new float[] {4f, 3f, 2f, 1f},
            new float[] {0f, 0f, 0.5f, 0f}, held, 5_000_000L, List.of(new Checkpoint.Copy(19, 1.25, 0.4f, new float[] {9f, 8f, 7f, 6f})),
            records(roundsDone));
    }

    @Test
    void aCheckpointReadsBackAsItWasWritten(@TempDir final Path dir) throws IOException {
        final Checkpoint c = checkpoint(1, 25, new Checkpoint.Held(new float[] {1f, 2f, 3f, 4f}, 25, 40, 11L, 12L, 13L, 24, 0.3f, 14L));
        final Path file = c.write(dir);
        assertThat(file.getFileName().toString()).isEqualTo("worker-1-after-25.ckpt");
        final Checkpoint back = Checkpoint.read(file);
        assertThat(back).usingRecursiveComparison().isEqualTo(c);
        assertThat(Checkpoint.read(checkpoint(2, 5, null).write(dir)).held()).isNull();
        try (var files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).as("no temporary file left").noneMatch(n -> n.endsWith(".tmp"));
        }
    }

    @Test
    void aDamagedOrForeignFileIsNamedNotRead(@TempDir final Path dir) throws IOException {
        final Path file = checkpoint(0, 10, null).write(dir);
        final byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 1;
        Files.write(file, bytes);
        assertThatThrownBy(() -> Checkpoint.read(file)).isInstanceOf(IOException.class).hasMessageContaining("is damaged");
        final Path cut = dir.resolve("cut.ckpt");
        Files.write(cut, Arrays.copyOf(Files.readAllBytes(checkpoint(0, 20, null).write(dir)), 30));
        assertThatThrownBy(() -> Checkpoint.read(cut)).isInstanceOf(IOException.class);
        final Path other = dir.resolve("other.ckpt");
        Files.writeString(other, "hello, this is no checkpoint");
        assertThatThrownBy(() -> Checkpoint.read(other)).isInstanceOf(IOException.class).hasMessageContaining("is not a Serene checkpoint");
    }

    @Test
    void eachWorkerKeepsItsNewestAndARunResumesFromTheNewestEveryWorkerHas(@TempDir final Path dir) throws IOException {
        assertThat(CheckpointDir.newestCommon(dir.resolve("missing"), 3)).as("none: from the start").isZero();
        for (int w = 0; w < 3; w++) {
            for (int n = 25; n <= 100; n += 25) {
                checkpoint(w, n, null).write(dir);
            }
        }
        assertThat(CheckpointDir.rounds(dir, 0)).as("the newest " + Checkpoint.KEEP).containsExactly(50, 75, 100);
        assertThat(CheckpointDir.newestCommon(dir, 3)).isEqualTo(100);
        // worker 2 killed before its checkpoint after round 125; the others wrote theirs
        checkpoint(0, 125, null).write(dir);
        checkpoint(1, 125, null).write(dir);
        assertThat(CheckpointDir.rounds(dir, 0)).containsExactly(75, 100, 125);
        assertThat(CheckpointDir.newestCommon(dir, 3)).isEqualTo(100);
        assertThat(CheckpointDir.newestCommon(dir, 4)).as("worker 3 has none").isZero();
    }

    @Test
    void aWorkerBackAfterTheOthersWentOnTakesAPeersModelWithItsOwnDataPosition(@TempDir final Path dir) throws IOException {
        checkpoint(1, 20, null).write(dir);
        checkpoint(0, 20, null).write(dir);
        checkpoint(0, 40, null).write(dir);
        checkpoint(2, 40, null).write(dir);
        assertThat(CheckpointDir.rejoinOffers(dir, 1, 3, 4)).as("the rounds any worker has").containsExactly(40, 20);
        assertThat(Checkpoint.forRejoin(dir, 1, 3, 20)).as("its own where it has one").usingRecursiveComparison()
            .isEqualTo(Checkpoint.read(Checkpoint.file(dir, 1, 20)));
        final Checkpoint peer = Checkpoint.read(Checkpoint.file(dir, 0, 40));
        final Checkpoint back = Checkpoint.forRejoin(dir, 1, 3, 40);
        assertThat(back.worker()).isEqualTo(1);
        assertThat(back.roundsDone()).isEqualTo(40);
        assertThat(back.parameters()).isEqualTo(peer.parameters());
        assertThat(back.velocity()).isEqualTo(peer.velocity());
        assertThat(back.steps()).isEqualTo(peer.steps());
        assertThat(back.records().start()).as("its own records, up to its own checkpoint").hasSize(20);
        assertThat(back.unreleased()).containsOnly(0f);
        assertThat(back.held()).isNull();
        assertThatThrownBy(() -> Checkpoint.forRejoin(dir, 1, 3, 60)).isInstanceOf(IOException.class).hasMessageContaining("after round 60");
    }

    @Test
    void aDamagedNewestCheckpointIsPassedOverForTheNewestThatReadsClean(@TempDir final Path dir) throws IOException {
        for (int w = 0; w < 3; w++) {
            checkpoint(w, 20, null).write(dir);
            checkpoint(w, 40, null).write(dir);
        }
        // worker 1's newest cut short (a disk that lost its tail), worker 2's with a bit flipped
        final Path cut = Checkpoint.file(dir, 1, 40);
        Files.write(cut, Arrays.copyOf(Files.readAllBytes(cut), 100));
        final Path flipped = Checkpoint.file(dir, 2, 40);
        final byte[] bytes = Files.readAllBytes(flipped);
        bytes[bytes.length / 3] ^= 4;
        Files.write(flipped, bytes);
        assertThat(CheckpointDir.newestCommon(dir, 3)).isEqualTo(20);
        assertThat(CheckpointDir.damaged(dir, 3)).hasSize(2).anyMatch(d -> d.contains("worker-1-after-40.ckpt") && d.contains("damaged"))
            .anyMatch(d -> d.contains("worker-2-after-40.ckpt") && d.contains("damaged"));
        assertThat(CheckpointDir.cleanRounds(dir, 1)).containsExactly(20);
        // worker 1 rejoining does not offer 40, its own there being damaged: the job goes back to 20, which every worker
        // holds exactly, and keeps to the path of the run without the fault (worker 2 offers 40 by name: it is not rejoining)
        assertThat(CheckpointDir.rejoinOffers(dir, 1, 3, 4)).containsExactly(20);
        assertThat(CheckpointDir.rejoinOffers(dir, 0, 3, 4)).as("worker 0's own 40 is whole").containsExactly(40, 20);
        assertThat(CheckpointDir.ownOffers(dir, 1, 4)).as("its own: only the clean one").containsExactly(20);
        // were the job to go on after 40 all the same, worker 1 would take worker 0's model (the one whole copy)
        assertThat(Checkpoint.forRejoin(dir, 1, 3, 40).parameters()).isEqualTo(Checkpoint.read(Checkpoint.file(dir, 0, 40)).parameters());
        // every worker's 40 damaged: nothing to go on from there (offered by name, refused when taken)
        Files.write(Checkpoint.file(dir, 0, 40), new byte[0]);
        assertThatThrownBy(() -> Checkpoint.forRejoin(dir, 1, 3, 40)).isInstanceOf(IOException.class).hasMessageContaining("reads clean");
    }

    @Test
    void writersAtOnceEachLeaveAWholeCheckpoint(@TempDir final Path dir) throws Exception {
        final ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            final List<Future<Path>> writes = new ArrayList<>();
            for (int i = 0; i < 24; i++) {
                // two incarnations of each worker writing the same rounds, as a stopped worker and its replacement would
                final int w = i % 2;
                final int n = 10 + (i / 4) * 10;
                writes.add(pool.submit(() -> checkpoint(w, n, null).write(dir)));
            }
            for (final Future<Path> f : writes) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(CheckpointDir.damaged(dir, 2)).isEmpty();
        assertThat(CheckpointDir.rounds(dir, 0)).containsExactly(40, 50, 60);
        assertThat(CheckpointDir.newestCommon(dir, 2)).isEqualTo(60);
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).noneMatch(n -> n.endsWith(".tmp"));
        }
    }

    @Test
    void aWriterKilledMidWriteLeavesEveryCheckpointWhole(@TempDir final Path dir) throws Exception {
        final Process writer = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
            System.getProperty("java.class.path"), CheckpointWriterMain.class.getName(), dir.toString()).redirectErrorStream(true).start();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(writer.getInputStream(), StandardCharsets.UTF_8))) {
            // two checkpoints written, then killed somewhere in the third (16 MB each: a write takes a while)
            assertThat(lines.readLine()).as("the writer's first round").isEqualTo("1");
            assertThat(lines.readLine()).isEqualTo("2");
            Thread.sleep(15);
        } finally {
            writer.destroyForcibly();
            assertThat(writer.waitFor(30, TimeUnit.SECONDS)).isTrue();
        }
        assertThat(CheckpointDir.rounds(dir, 0)).hasSizeGreaterThanOrEqualTo(2);
        assertThat(CheckpointDir.damaged(dir, 1)).as("no checkpoint in place is partial").isEmpty();
        assertThat(CheckpointDir.newestCommon(dir, 1)).isGreaterThanOrEqualTo(2);
        // the next writer clears what the killed one left
        checkpoint(0, 1000, null).write(dir);
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(f -> f.getFileName().toString())).noneMatch(n -> n.endsWith(".tmp"));
        }
    }
}
