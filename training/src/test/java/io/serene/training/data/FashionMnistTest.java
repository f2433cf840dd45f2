package io.serene.training.data;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class FashionMnistTest {
    @Test
    void readsWhatItWroteAndShardsDisjointly(@TempDir final Path dir) throws Exception {
        FashionMnist.writeSynthetic(dir, 300, 50, 4);
        final FashionMnist data = FashionMnist.load(dir);
        assertThat(data.train.size()).isEqualTo(300);
        assertThat(data.test.size()).isEqualTo(50);
        assertThat(data.train.features()).isEqualTo(784);
        final float[] image = new float[784];
        data.train.image(0, image, 0);
        for (final float v : image) {
            assertThat(v).isBetween(0f, 1f);
        }
        final Set<Integer> seen = new HashSet<>();
        int total = 0;
        for (int w = 0; w < 3; w++) {
            final int[] shard = data.train.shard(w, 3, 9);
            assertThat(shard).isEqualTo(data.train.shard(w, 3, 9));
            Arrays.stream(shard).forEach(seen::add);
            total += shard.length;
        }
        assertThat(total).isEqualTo(300);
        assertThat(seen).hasSize(300);
    }

    @Test
    void missingAndCorruptFilesGetClearMessages(@TempDir final Path dir) throws Exception {
        assertThatThrownBy(() -> FashionMnist.load(dir.resolve("nowhere"))).hasMessageContaining("no dataset directory");
        FashionMnist.writeSynthetic(dir, 20, 10, 1);
        final Path images = dir.resolve("t10k-images-idx3-ubyte.gz");
        final byte[] good = Files.readAllBytes(images);
        Files.write(images, Arrays.copyOf(good, good.length / 2));
        assertThatThrownBy(() -> FashionMnist.load(dir)).hasMessageContaining("t10k-images-idx3-ubyte.gz");
        Files.write(images, new byte[] {1, 2, 3});
        assertThatThrownBy(() -> FashionMnist.load(dir)).hasMessageContaining("not a valid gzip file");
        Files.delete(images);
        assertThatThrownBy(() -> FashionMnist.load(dir)).hasMessageContaining("missing dataset file")
            .hasMessageContaining("--data");
        Files.write(images, good);
        Files.copy(dir.resolve("t10k-labels-idx1-ubyte.gz"), dir.resolve("train-images-idx3-ubyte.gz"),
            StandardCopyOption.REPLACE_EXISTING);
        assertThatThrownBy(() -> FashionMnist.load(dir)).hasMessageContaining("not an IDX file of the expected kind");
    }

    @Test
    void readsTheDebianPackageWhenInstalled() {
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isDirectory(FashionMnist.DEBIAN_DIR), "package not installed");
        final FashionMnist data = FashionMnist.load(FashionMnist.DEBIAN_DIR);
        assertThat(data.train.size()).isEqualTo(60_000);
        assertThat(data.test.size()).isEqualTo(10_000);
        assertThat(data.train.rows).isEqualTo(28);
    }
}
