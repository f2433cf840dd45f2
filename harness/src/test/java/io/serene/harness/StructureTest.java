package io.serene.harness;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** The code's shape a newcomer can hold: no main source file over 500 lines, the harness (the top floor) under 6,000. */
class StructureTest {
    private static Path root() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("pom.xml")) && Files.isDirectory(dir.resolve("harness"))) {
                return dir;
            }
        }
        throw new IllegalStateException("no checkout above " + Path.of("").toAbsolutePath());
    }

    private static long lines(final Path file) {
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8).size();
        } catch (final IOException ex) {
            throw new IllegalStateException(file + ": " + ex.getMessage(), ex);
        }
    }

    private static List<Path> mainSources(final Path under) throws IOException {
        try (Stream<Path> files = Files.walk(under)) {
            return files.filter(f -> f.toString().endsWith(".java") && f.toString().contains("/src/main/java/")
                && !f.toString().contains("/target/")).toList();
        }
    }

    @Test
    void noMainFileIsOver500LinesAndTheHarnessIsUnder6000() throws IOException {
        final Path root = root();
        final List<String> tooLong = new ArrayList<>();
        final List<Path> all = mainSources(root);
        for (final Path file : all) {
            if (lines(file) > 500) {
                tooLong.add(root.relativize(file) + ": " + lines(file) + " lines");
            }
        }
        assertThat(all).as("main sources found").hasSizeGreaterThan(100);
        assertThat(tooLong).as("main files over 500 lines").isEmpty();
        final long harness = mainSources(root.resolve("harness")).stream().mapToLong(StructureTest::lines).sum();
        assertThat(harness).as("lines of harness/src/main").isBetween(1_000L, 6_000L);
    }
}
