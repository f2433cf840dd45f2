package io.serene.harness.cli;

import io.serene.protocol.JobKeys;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

import java.util.concurrent.Callable;

/** {@code serene keys}: the credentials a job's launcher hands out, derived from the switch's secret or the job's. */
@Command(name = "keys", mixinStandardHelpOptions = true,
    description = {"Prints a credential derived from the secret of --secret-file (or SERENE_SECRET): a worker's own key "
        + "(--worker W), which lets it sign as that worker of that job and no other, or a job's secret (--job-secret), which gives "
        + "the keys of that job's workers and no other job's (for a tenant of a shared switch, whose launcher hands out its "
        + "workers' keys). Give either to serene worker by --secret-file or SERENE_SECRET. See docs/protocol.md, \"Jobs, keys and incarnations\".",
        "E.g. serene keys --secret-file switch.secret --job 7 --worker 2 > worker2.key"})
public final class KeysCommand implements Callable<Integer> {
    @Option(names = "--job", required = true, description = "The job id.")
    int job;

    @ArgGroup(multiplicity = "1")
    Which which;

    static final class Which {
        @Option(names = "--worker", description = "Print this worker's key.")
        Integer worker;

        @Option(names = "--job-secret", description = "Print the job's secret (needs the switch's secret).")
        boolean jobSecret;
    }

    @Mixin
    SecretOption secret = new SecretOption();

    @Override
    public Integer call() {
        final JobKeys.Credential credential = secret.credential();
        if (credential == null) {
            throw new IllegalArgumentException("serene keys needs a secret to derive from: --secret-file FILE or " + JobKeys.SECRET_ENV);
        }
        if (which.worker != null) {
            if (which.worker < 0 || which.worker > 0xFFFF) {
                throw new IllegalArgumentException("--worker must be in 0..65535, was " + which.worker);
            }
            System.out.println(credential.keyOf(job, which.worker).text());
        } else if (credential instanceof JobKeys.SwitchSecret s) {
            System.out.println(new JobKeys.JobSecret(job, JobKeys.jobSecret(s.secret(), job), "").text());
        } else {
            throw new IllegalArgumentException("--job-secret needs the switch's secret; this one is a job's secret or a worker's key");
        }
        return 0;
    }
}
