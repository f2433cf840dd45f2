package io.serene.training;

import io.serene.transport.ModelledLink;

import java.io.PrintStream;
import java.util.Locale;

/**
 * A training worker's result: the JSON line it prints last, written and read as this type
 * ({@link Json}). Times are seconds on the run's shared axis.
 *
 * @param seconds            training time (end minus start)
 * @param skippedRounds      rounds released without this worker, nothing sent
 * @param droppedRounds      rounds whose gradient was computed, then dropped (released without it, late mode drop)
 * @param samples            images in the gradients it sent
 * @param deferredEvaluation evaluated after training, off the clock (not part of end minus start)
 * @param device             with a modelled device: its steps and their overruns (null: compute took the host's time)
 * @param link               with a modelled link: the packets and transfers it carried and how many transfers ended late (null: none)
 */
public record WorkerResult(int worker, int rounds, double seconds, double startSeconds, double endSeconds, double computeSeconds,
                           double injectedSeconds, int skippedRounds, int droppedRounds, long samples, boolean rebalance,
                           double waitingSeconds, double evaluationSeconds, boolean deferredEvaluation, String stragglers,
                           float finalLoss, double finalAccuracy, String modelHash, long seed, ModelledSteps.Report device,
                           ModelledLink.Report link) {
    /** Prints the line a worker ends with, and with a modelled device ({@code device}) how its steps went. */
    public void printDone(final PrintStream out, final DeviceModel device) {
        out.printf(Locale.ROOT, "worker %d done: %d rounds in %.2f s (compute %.2f s, injected straggling %.2f s, waiting %.2f s), "
            + "loss %.4f, accuracy %.4f, model %s%n", worker, rounds, seconds, computeSeconds, injectedSeconds, waitingSeconds, finalLoss,
            finalAccuracy, modelHash);
        if (this.device != null) {
            out.printf(Locale.ROOT, "worker %d: modelled steps of %s; the host's compute %.2f s; %d of %d steps overran their "
                + "modelled time%n", worker, device, this.device.hostComputeSeconds(), this.device.overrunSteps(), this.device.steps());
        }
    }
}
