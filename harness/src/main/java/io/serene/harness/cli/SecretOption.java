package io.serene.harness.cli;

import io.serene.protocol.JobTag;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The job secret {@code serene switch} and {@code serene worker} share: from {@code --secret-file},
 * else the environment's {@value JobTag#SECRET_ENV}, else none. Every packet of a job carries a tag derived from
 * it ({@link JobTag}), so only holders of the secret can take part in the job or read its aggregates.
 */
final class SecretOption {
    @Option(names = "--secret-file", description = "A file holding the job secret (at least " + JobTag.MIN_SECRET_BYTES + " bytes; "
        + "the same for the switch and every worker of a job): every packet then carries a tag derived from it, and the switch and "
        + "the workers drop packets without it, so no other process can change the job's sums or read them. Unset: from " + JobTag.SECRET_ENV
        + "; neither: no secret (any process that can reach the switch can join a job that is not full).")
    Path file;

    /** The secret, or null for none; a missing or short one is an error naming where it came from. */
    byte[] secret() {
        if (file != null) {
            try {
                return JobTag.secret(Files.readString(file, StandardCharsets.UTF_8), "--secret-file " + file);
            } catch (final IOException ex) {
                throw new IllegalArgumentException("--secret-file " + file + ": cannot read it (" + ex.getMessage() + ")");
            }
        }
        final String env = System.getenv(JobTag.SECRET_ENV);
        return env == null || env.isBlank() ? null : JobTag.secret(env, JobTag.SECRET_ENV);
    }
}
