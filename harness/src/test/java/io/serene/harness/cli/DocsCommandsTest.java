package io.serene.harness.cli;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every {@code ./serene ...} command in the README's and the docs' code blocks parses: its
 * subcommand and options exist and take the values given, so docs and code cannot drift apart.
 */
class DocsCommandsTest {
    /** The checkout's root: where README.md and docs/ are, upwards from the working directory. */
    private static Path root() {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            if (Files.isRegularFile(dir.resolve("README.md")) && Files.isDirectory(dir.resolve("docs"))) {
                return dir;
            }
        }
        throw new IllegalStateException("no README.md and docs/ above " + Path.of("").toAbsolutePath());
    }

    @Test
    void everySereneCommandInTheDocsParses() throws IOException {
        final Path root = root();
        final List<Path> files = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> docs = Files.list(root.resolve("docs"))) {
            docs.filter(f -> f.getFileName().toString().endsWith(".md")).sorted().forEach(files::add);
        }
        final List<String> failures = new ArrayList<>();
        int commands = 0;
        for (final Path file : files) {
            final List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            for (int i = 0; i < lines.size(); i++) {
                final String line = lines.get(i).strip();
                if (!line.startsWith("./serene ")) {
                    continue;
                }
                final int at = i + 1;
                final StringBuilder command = new StringBuilder(withoutComment(line));
                // continued lines
                while (command.toString().endsWith("\\") && i + 1 < lines.size()) {
                    command.setLength(command.length() - 1);
                    command.append(' ').append(withoutComment(lines.get(++i).strip()));
                }
                final List<String> words = words(command.toString());
                // a redirection or a pipe ends the command's own words
                for (int w = 1; w < words.size(); w++) {
                    if (words.get(w).startsWith(">") || words.get(w).equals("|")) {
                        words.subList(w, words.size()).clear();
                    }
                }
                commands++;
                try {
                    new CommandLine(new Serene()).parseArgs(words.subList(1, words.size()).toArray(String[]::new));
                } catch (final CommandLine.ParameterException ex) {
                    failures.add(root.relativize(file) + ":" + at + ": " + command + "\n    " + ex.getMessage());
                }
            }
        }
        assertThat(commands).as("commands found").isGreaterThan(50);
        assertThat(failures).as("commands in the docs that do not parse").isEmpty();
    }

    /** The docs a newcomer reads (docs/ without the lab notes) stay under 12,000 words: about an hour's reading. */
    @Test
    void theDocsReadInAnHour() throws IOException {
        long words = 0;
        try (Stream<Path> docs = Files.list(root().resolve("docs"))) {
            for (final Path doc : docs.filter(f -> f.getFileName().toString().endsWith(".md")).toList()) {
                words += java.util.Arrays.stream(Files.readString(doc, StandardCharsets.UTF_8).split("\\s+")).filter(w -> !w.isEmpty()).count();
            }
        }
        assertThat(words).as("words in docs/*.md (history goes to docs/notes/)").isBetween(5_000L, 12_000L);
    }

    /** Every relative link in the README and the docs (lab notes included) names a file or directory of the checkout. */
    @Test
    void everyLinkInTheDocsResolves() throws IOException {
        final Path root = root();
        final List<Path> files = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
            docs.filter(f -> f.getFileName().toString().endsWith(".md")).sorted().forEach(files::add);
        }
        final java.util.regex.Pattern link = java.util.regex.Pattern.compile("\\]\\(([^)#\\s]+)(#[^)]*)?\\)");
        final List<String> broken = new ArrayList<>();
        for (final Path file : files) {
            final java.util.regex.Matcher m = link.matcher(Files.readString(file, StandardCharsets.UTF_8));
            while (m.find()) {
                final String target = m.group(1);
                if (!target.contains("://") && !Files.exists(file.getParent().resolve(target).normalize())) {
                    broken.add(root.relativize(file) + ": " + target);
                }
            }
        }
        assertThat(files).as("README and docs").hasSizeGreaterThan(10);
        assertThat(broken).as("links that name no file").isEmpty();
    }

    /** The deploy examples are files that parse: the Slurm script as bash, each {@code ./serene} command in it and in the manifests. */
    @Test
    void theDeployExamplesParse() throws Exception {
        final Path root = root();
        final Path sbatch = root.resolve("deploy/slurm/serene.sbatch");
        final Process bash = new ProcessBuilder("bash", "-n", sbatch.toString()).redirectErrorStream(true).start();
        final String bashSays = new String(bash.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(bash.waitFor()).as("bash -n %s: %s", sbatch, bashSays).isZero();
        final List<List<String>> commands = new ArrayList<>();
        for (final String line : Files.readAllLines(sbatch, StandardCharsets.UTF_8)) {
            final int at = line.indexOf("./serene ");
            if (at >= 0 && !line.strip().startsWith("#")) {
                final List<String> words = words(withoutComment(line.substring(at)));
                if (words.get(words.size() - 1).equals("&")) {
                    words.remove(words.size() - 1);
                }
                commands.add(words);
            }
        }
        assertThat(commands).as("the switch and the workers").hasSize(2);
        final com.fasterxml.jackson.databind.ObjectMapper yaml = new com.fasterxml.jackson.databind.ObjectMapper(
            new com.fasterxml.jackson.dataformat.yaml.YAMLFactory());
        final Path manifests = root.resolve("deploy/kubernetes/serene.yaml");
        final List<String> kinds = new ArrayList<>();
        try (com.fasterxml.jackson.databind.MappingIterator<com.fasterxml.jackson.databind.JsonNode> docs =
                 yaml.readerFor(com.fasterxml.jackson.databind.JsonNode.class).readValues(manifests.toFile())) {
            while (docs.hasNext()) {
                final com.fasterxml.jackson.databind.JsonNode doc = docs.next();
                kinds.add(doc.path("kind").asText());
                for (final com.fasterxml.jackson.databind.JsonNode c : doc.path("spec").path("template").path("spec").path("containers")) {
                    final List<String> args = new ArrayList<>();
                    c.path("args").forEach(a -> args.add(a.asText()));
                    assertThat(args).as("%s: a container's args", manifests).startsWith("./serene");
                    commands.add(args);
                }
            }
        }
        assertThat(kinds).containsExactly("Secret", "Service", "Deployment", "Job");
        assertThat(commands).hasSize(4);
        for (final List<String> words : commands) {
            new CommandLine(new Serene()).parseArgs(words.subList(1, words.size()).toArray(String[]::new));
        }
    }

    /** The line without a trailing shell comment ({@code  # ...} outside quotes). */
    private static String withoutComment(final String line) {
        boolean single = false;
        boolean dbl = false;
        for (int i = 0; i < line.length(); i++) {
            final char c = line.charAt(i);
            if (c == '\'' && !dbl) {
                single = !single;
            } else if (c == '"' && !single) {
                dbl = !dbl;
            } else if (c == '#' && !single && !dbl && i > 0 && Character.isWhitespace(line.charAt(i - 1))) {
                return line.substring(0, i).strip();
            }
        }
        return line.strip();
    }

    /** Shell words: split on blanks outside quotes, the quotes removed. */
    private static List<String> words(final String command) {
        final List<String> words = new ArrayList<>();
        final StringBuilder word = new StringBuilder();
        boolean single = false;
        boolean dbl = false;
        boolean any = false;
        for (int i = 0; i < command.length(); i++) {
            final char c = command.charAt(i);
            if (c == '\'' && !dbl) {
                single = !single;
                any = true;
            } else if (c == '"' && !single) {
                dbl = !dbl;
                any = true;
            } else if (Character.isWhitespace(c) && !single && !dbl) {
                if (any || word.length() > 0) {
                    words.add(word.toString());
                    word.setLength(0);
                    any = false;
                }
            } else {
                word.append(c);
            }
        }
        if (any || word.length() > 0) {
            words.add(word.toString());
        }
        return words;
    }
}
