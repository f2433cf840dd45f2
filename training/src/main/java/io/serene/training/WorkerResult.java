package io.serene.training;

import io.serene.transport.ModelledLink;

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
}
