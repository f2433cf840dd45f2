package io.serene.harness;

import io.serene.protocol.SyncSchedule;
import picocli.CommandLine.Command;

import java.io.PrintStream;
import java.util.concurrent.Callable;

/**
 * {@code serene demo}: the embedded default. First an exact in-network allreduce over UDP against a
 * raw UDP echo, then the point of hybrid synchronization in virtual time: the same job under BSP,
 * SSP and the adaptive policy with one persistent and some transient stragglers, side by side.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = {
        "Runs the embedded default in two parts:",
        "1. a switch and 4 workers over UDP on 127.0.0.1 with 1%% injected loss aggregate 1M-element gradients for "
            + "5 rounds, checked exact, against a raw UDP echo (serene bench allreduce);",
        "2. a simulated job of 16 workers and 300 rounds, one worker 3x slower and 2%% transient 4x stragglers, "
            + "under BSP, SSP(3) and the adaptive policy, side by side (serene sim)."})
public final class DemoCommand implements Callable<Integer> {
    /** The same as examples/adaptive.policy, embedded so the demo runs from anywhere. */
    private static final String ADAPTIVE = String.join("\n",
        "policy adaptive",
        "start bsp",
        "when lag >= 2 for 3 rounds then ssp(4)",
        "when lag <= 1 for 20 rounds then bsp",
        "when slowdown(worker) > 2.5 for 5 rounds then exclude(worker) fold",
        "when slowdown(worker) < 1.5 for 10 rounds then include(worker)");

    @Override
    public Integer call() throws Exception {
        final PrintStream out = System.out;
        out.println("== 1. exact in-network allreduce over UDP ==");
        final int bench = new picocli.CommandLine(new BenchCommand.Allreduce()).execute(
            "--workers", "4", "--elements", "1000000", "--rounds", "5", "--loss", "0.01", "--seed", "7");
        out.println();
        out.println("== 2. stragglers: BSP vs SSP vs the adaptive policy (virtual time) ==");
        final String stragglers = "persistent:5:x3+transient:p=0.02,x4";
        final String[] names = {"bsp", "ssp:3", "adaptive"};
        final ScenarioRunner.ScenarioResult[] results = new ScenarioRunner.ScenarioResult[names.length];
        for (int i = 0; i < names.length; i++) {
            final Scenario scenario = new Scenario().workers(16).rounds(300).stragglers(stragglers).seed(7);
            if (names[i].equals("adaptive")) {
                scenario.policy(io.serene.controlplane.PolicyParser.parse(ADAPTIVE));
            } else {
                scenario.schedule(SyncSchedule.parse(names[i]));
            }
            results[i] = new ScenarioRunner(scenario).run();
        }
        out.printf("%-10s %10s %10s %14s %10s %8s  %s%n", "policy", "JCT (s)", "speed-up", "waiting (s)",
            "compute", "switches", "checks");
        for (int i = 0; i < names.length; i++) {
            final ScenarioRunner.ScenarioResult r = results[i];
            out.printf("%-10s %10.2f %9.2fx %14.1f %10.2f %8d  %s%n", names[i], r.jctNs / 1e9,
                (double) results[0].jctNs / r.jctNs, r.cumulativeWaitingNs / 1e9, r.computeShare, r.decisions.size(),
                r.allChecks() ? "all pass" : "FAILED");
        }
        results[2].decisions.forEach(d -> out.println("  adaptive: " + d));
        boolean ok = bench == 0;
        for (final ScenarioRunner.ScenarioResult r : results) {
            ok &= r.allChecks();
        }
        return ok ? 0 : 1;
    }
}
