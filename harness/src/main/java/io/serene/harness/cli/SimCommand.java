package io.serene.harness.cli;

import io.serene.controlplane.Policy;
import io.serene.controlplane.PolicyParser;
import io.serene.sim.Scenario;
import io.serene.sim.ScenarioResult;
import io.serene.sim.ScenarioRunner;
import io.serene.protocol.sync.SyncSchedule;
import io.serene.training.Json;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** {@code serene sim}: the scenario runner, in virtual time. */
@Command(name = "sim", mixinStandardHelpOptions = true,
    description = {
        "Simulates a job in virtual time: the real switch and worker engines on the in-process transport, "
            + "synthetic gradients, modelled compute times with injected stragglers, and checks of docs/design.md's "
            + "invariants (exactly once, agreement, bound, hot-swap consistency, liveness).",
        "",
        "POLICY is a sync config or a schedule of them, CONFIG@FIRST_ROUND,...:",
        "  bsp | ssp:S | asp | fastest:K | quorum:K | timeout:MS | exclude:W1,W2 | drop | fold, combined with +,",
        "  e.g. ssp:2+timeout:50, or bsp@0,ssp:3@100,fastest:14@200,bsp@300",
        "",
        "PROFILE injects stragglers (factors multiply across parts joined with +):",
        "  none | persistent:W:xF | transient:p=P,xF[,rounds=L] | moving:xF,rounds=L | heavytail:alpha=A | classes:A-B=xF,... | trace:FILE",
        "  (trace lines: worker,round,factor; rounds cycle)"})
public final class SimCommand implements Callable<Integer> {
    @Option(names = "--workers", defaultValue = "16", description = "Workers. Default: ${DEFAULT-VALUE}.")
    int workers;

    @Option(names = "--rounds", defaultValue = "100", description = "Rounds. Default: ${DEFAULT-VALUE}.")
    int rounds;

    @Option(names = "--policy", defaultValue = "bsp", description = "Sync config or schedule (see above), or auto (the "
        + "controller chooses the config: docs/policy.md). Default: ${DEFAULT-VALUE}.")
    String policy;

    @Option(names = "--policy-file", description = "A policy (docs/policy.md) whose controller changes the config while the job runs; replaces --policy.")
    Path policyFile;

    @Option(names = "--stragglers", defaultValue = "none", description = "Straggler profile (see above). Default: ${DEFAULT-VALUE}.")
    String stragglers;

    @Option(names = "--seed", defaultValue = "1", description = "Seed of compute times, stragglers, gradients and faults. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--elements", defaultValue = "512", description = "Gradient elements per round. Default: ${DEFAULT-VALUE}.")
    int elements;

    @Option(names = "--compute-ms", defaultValue = "10", description = "Mean compute time per round in virtual ms. Default: ${DEFAULT-VALUE}.")
    double computeMs;

    @Option(names = "--loss", defaultValue = "0", description = "Injected packet loss rate. Default: ${DEFAULT-VALUE}.")
    double loss;

    @Option(names = "--json", description = "Print one JSON object as the last line.")
    boolean json;

    @Override
    public Integer call() {
        final Policy builtIn = PolicyParser.builtIn(policy);
        final Scenario scenario = new Scenario().workers(workers).rounds(rounds)
            .schedule(SyncSchedule.parse(builtIn == null ? policy : "bsp"))
            .stragglers(stragglers).seed(seed).elements(elements).computeNs((long) (computeMs * 1e6))
            .faults(loss, 0, 0);
        if (builtIn != null) {
            scenario.policy(builtIn);
        }
        if (policyFile != null) {
            scenario.policy(PolicyCommand.load(policyFile));
            policy = policyFile.toString();
        }
        final PrintStream out = System.out;
        out.printf("sim: %d workers, %d rounds, policy %s, stragglers %s, seed %d%n", workers, rounds, policy,
            stragglers, seed);
        final ScenarioResult r = new ScenarioRunner(scenario).progress(System.err).run();
        out.printf("virtual JCT %.3f s (all workers done at %.3f s), cumulative waiting %.3f s, compute share %.3f%n",
            r.jctNs / 1e9, r.allWorkersDoneNs / 1e9, r.cumulativeWaitingNs / 1e9, r.computeShare);
        out.printf("staleness max %d, mean %.2f; chunks included %d, folded %d, dropped %d; refusals %d, late %d, "
                + "reports %d, partial releases %d (timeouts %d), config installs %d, rounds skipped %d (gradients dropped %d), "
                + "gradients computed while waiting %d%n",
            r.maxStaleness, r.meanStaleness, r.included, r.folded, r.dropped, r.refusals, r.late, r.reports, r.partialReleases,
            r.timeoutReleases,
            r.configInstalls, r.skippedRounds, r.droppedGradients, r.busyGradients);
        out.printf("checks: completed %s, exactly once %s, agreement %s, bound respected %s, hot-swap consistent %s, "
                + "errors %d%n", r.completed, r.exactlyOnce, r.agreement, r.boundRespected, r.hotSwapConsistent, r.errors);
        out.printf("mode switches: %d%n", r.decisions.size());
        r.decisions.forEach(d -> out.println("  " + d));
        out.printf("%d events in %.2f s wall (%.0f events/s)%n", r.events, r.wallNs / 1e9, r.events / (r.wallNs / 1e9));
        if (json) {
            out.println(Json.write(r.toJson()));
        }
        return r.allChecks() ? 0 : 1;
    }
}
