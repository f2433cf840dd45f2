package io.serene.training;

/**
 * One worker's record of one round: a line of {@code workers/worker-N.jsonl} and
 * {@code records.jsonl}, written and read as this type ({@link Json}). Times are seconds on the
 * run's shared axis ({@link RoundRecords}); {@code loss} is null for a round skipped or dropped,
 * {@code accuracy} and {@code evaluatedSeconds} for a round not evaluated.
 *
 * @param startSeconds     when the round started (before its clearance)
 * @param computeSeconds   measured compute of its gradient
 * @param injectedSeconds  straggling injected on top of it
 * @param waitingSeconds   blocked: clearance for the round, then its aggregate
 * @param staleness        earlier rounds whose aggregate the model lacked when the gradient was computed
 * @param batch            images in the gradient
 * @param sendSeconds      when the gradient was sent
 * @param releaseSeconds   when the round's aggregate arrived
 * @param hostComputeSeconds with a modelled device ({@code computeSeconds} its step): the host's real compute
 *                         inside it; null when nothing is modelled ({@code computeSeconds} is the host's)
 */
public record RoundRecord(int worker, int round, double startSeconds, double computeSeconds, double injectedSeconds,
                          double waitingSeconds, int staleness, int batch, double sendSeconds, double releaseSeconds,
                          boolean skipped, boolean dropped, Float loss, Double accuracy, Double evaluatedSeconds,
                          Double hostComputeSeconds) {
}
