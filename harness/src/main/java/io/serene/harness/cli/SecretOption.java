package io.serene.harness.cli;

import io.serene.protocol.JobKeys;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The credential of {@code serene switch}, {@code serene worker} and {@code serene keys}: from
 * {@code --secret-file}, else the environment's {@value JobKeys#SECRET_ENV}, else none. A switch
 * needs the switch's secret; a worker takes the switch's secret, its job's secret or its own key
 * ({@link JobKeys}) and signs every packet with its key.
 */
final class SecretOption {
    @Option(names = "--secret-file", description = "A file holding a secret. The switch's: at least " + JobKeys.MIN_SECRET_BYTES
        + " bytes; every worker's packets must then carry a MAC under its own key, derived from it, and the switch signs its "
        + "own. A worker's: the switch's secret, its job's or its own key (serene keys prints the last two). Unset: from "
        + JobKeys.SECRET_ENV + "; neither: no secret (any process that can reach the switch can join a job that is not full).")
    Path file;

    /** The credential, or null for none; a missing, short or malformed one is an error naming where it came from. */
    JobKeys.Credential credential() {
        if (file != null) {
            try {
                return JobKeys.credential(Files.readString(file, StandardCharsets.UTF_8), "--secret-file " + file);
            } catch (final IOException ex) {
                throw new IllegalArgumentException("--secret-file " + file + ": cannot read it (" + ex.getMessage() + ")");
            }
        }
        final String env = System.getenv(JobKeys.SECRET_ENV);
        return env == null || env.isBlank() ? null : JobKeys.credential(env, JobKeys.SECRET_ENV);
    }

    /** The switch's secret, or null for none; a job's secret or a worker's key is an error (they cannot sign for every job). */
    byte[] switchSecret() {
        final JobKeys.Credential credential = credential();
        if (credential == null) {
            return null;
        }
        if (credential instanceof JobKeys.SwitchSecret s) {
            return s.secret();
        }
        throw new IllegalArgumentException((file != null ? "--secret-file " + file : JobKeys.SECRET_ENV) + " holds a "
            + (credential instanceof JobKeys.JobSecret ? "job's secret" : "worker's key") + ": the switch needs the secret they derive from");
    }

    /** Worker {@code worker}'s key in job {@code job}, or null without a credential. */
    JobKeys.WorkerKey keyOf(final int job, final int worker) {
        final JobKeys.Credential credential = credential();
        return credential == null ? null : credential.keyOf(job, worker);
    }
}
