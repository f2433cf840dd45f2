package io.serene.harness.cli;

import picocli.CommandLine.IDefaultValueProvider;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * Where an option not given on the command line takes its value from, in this order: the
 * launcher's environment (torchrun, Slurm, Kubernetes: {@link #LAUNCHER}), the defaults file
 * ({@code SERENE_DEFAULTS}, else {@code ~/.serene.properties} when it exists; keys
 * {@code worker.switch}, {@code train.workers}, or a bare {@code seed} for every command with
 * that option), then the option's own default.
 */
public final class Defaults implements IDefaultValueProvider {
    /** Environment variables a launcher sets, per command and option, the first one set wins. */
    static final Map<String, Map<String, List<String>>> LAUNCHER = Map.of("worker", Map.of(
        "id", List.of("RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX"),
        "workers", List.of("WORLD_SIZE", "SLURM_NTASKS"),
        "switch", List.of("SERENE_SWITCH", "MASTER_ADDR:MASTER_PORT"),
        "job", List.of("SERENE_JOB")), "agent", Map.of(
        // not MASTER_ADDR:MASTER_PORT: under torchrun that is the rendezvous store of the client's own process group
        "id", List.of("RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX"),
        "workers", List.of("WORLD_SIZE", "SLURM_NTASKS"),
        "switch", List.of("SERENE_SWITCH"),
        "job", List.of("SERENE_JOB")));

    /** Fails, naming {@code command}, unless a worker's id and the job's worker count were given (or a launcher's) and fit. */
    static void requireMember(final String command, final Integer id, final Integer workers) {
        if (id == null || workers == null) {
            throw new IllegalArgumentException(command + " needs its id and the job's worker count: --id and --workers, "
                + "or RANK and WORLD_SIZE (SLURM_PROCID and SLURM_NTASKS) from a launcher");
        }
        if (workers <= 0 || id < 0 || id >= workers) {
            throw new IllegalArgumentException("--id must be in 0.." + (workers - 1) + " and --workers positive, were " + id + " and " + workers);
        }
    }

    private final Map<String, String> env;
    private final Properties file;

    Defaults(final Map<String, String> env, final Path file) {
        this.env = env;
        this.file = new Properties();
        if (file != null) {
            try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                this.file.load(in);
            } catch (final IOException ex) {
                throw new UncheckedIOException("cannot read the defaults file " + file + " (SERENE_DEFAULTS): " + ex.getMessage(), ex);
            }
        }
    }

    /** The process's environment and defaults file. */
    static Defaults fromEnvironment() {
        final Map<String, String> env = System.getenv();
        final String named = env.get("SERENE_DEFAULTS");
        if (named != null && !named.isBlank()) {
            final Path p = Path.of(named);
            if (!Files.isReadable(p)) {
                throw new IllegalArgumentException("SERENE_DEFAULTS names " + p + ", which does not exist or cannot be read");
            }
            return new Defaults(env, p);
        }
        final Path home = Path.of(System.getProperty("user.home"), ".serene.properties");
        return new Defaults(env, Files.isReadable(home) ? home : null);
    }

    @Override
    public String defaultValue(final ArgSpec arg) {
        if (!(arg instanceof OptionSpec)) {
            return null;
        }
        final String option = ((OptionSpec) arg).longestName().replaceFirst("^-+", "");
        final String command = arg.command().qualifiedName(".").replaceFirst("^serene\\.?", "");
        final String launched = fromLauncher(command, option);
        if (launched != null) {
            return launched;
        }
        final String qualified = file.getProperty(command.isEmpty() ? option : command + "." + option);
        return qualified != null ? qualified.trim() : file.getProperty(option) != null ? file.getProperty(option).trim() : null;
    }

    private String fromLauncher(final String command, final String option) {
        final List<String> names = LAUNCHER.getOrDefault(command, Map.of()).get(option);
        if (names == null) {
            return null;
        }
        for (final String name : names) {
            final String[] parts = name.split(":");
            final StringBuilder value = new StringBuilder();
            for (final String part : parts) {
                final String v = env.get(part);
                if (v == null || v.isBlank()) {
                    value.setLength(0);
                    break;
                }
                value.append(value.length() == 0 ? "" : ":").append(v.trim());
            }
            if (value.length() > 0) {
                return value.toString();
            }
        }
        return null;
    }
}
