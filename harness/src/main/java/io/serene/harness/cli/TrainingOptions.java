package io.serene.harness.cli;

import io.serene.training.ComputeClock;
import io.serene.training.ComputeOn;
import io.serene.training.DeviceModel;
import io.serene.training.FreshWait;
import io.serene.training.LrSchedule;
import io.serene.training.ModelKind;
import io.serene.training.StaleMomentum;
import io.serene.training.StaleScale;
import io.serene.training.StragglerProfile;
import io.serene.training.TrainDefaults;
import io.serene.training.TrainSettings;
import io.serene.training.data.GlobalBatch;
import io.serene.transport.LinkModel;
import picocli.CommandLine.Option;

import java.nio.file.Path;

/**
 * The training options {@code serene train} and {@code serene worker} share, declared once (a
 * picocli mixin): names, defaults ({@link TrainDefaults}) and help texts. {@link #settings()} turns
 * them into {@link TrainSettings}, whose {@code arguments()} are these options again.
 */
public final class TrainingOptions {
    @Option(names = "--model", defaultValue = TrainDefaults.MODEL, description = "mlp (784-128-10) or cnn (LeNet-style). Default: ${DEFAULT-VALUE}.")
    String model;

    @Option(names = "--stragglers", defaultValue = TrainDefaults.STRAGGLERS, description = "Straggler profile (" + StragglerProfile.SYNTAX
        + "), seeded: a worker's step lasts F times its modelled step (--step-time), or it sleeps (F - 1) times its measured "
        + "compute time with no device modelled; pauses come on top. Default: ${DEFAULT-VALUE}.")
    String stragglers;

    @Option(names = "--rounds", description = "Rounds (one batch per worker each). Default: one epoch (--epochs 1).")
    Integer rounds;

    @Option(names = "--epochs", description = "Passes over each worker's shard instead of --rounds: rounds = E x ceil(shard / batch).")
    Double epochs;

    @Option(names = "--batch", defaultValue = TrainDefaults.BATCH, description = "Batch size per worker. Default: ${DEFAULT-VALUE}.")
    int batch;

    @Option(names = "--rebalance", negatable = true, defaultValue = "true", fallbackValue = "true", description = "Keep a "
        + "round's samples near N x batch while rounds are released with fewer contributions (exclusion, fastest-k, timeouts): "
        + "the next batch is batch x N / the mean contributions of the last " + GlobalBatch.WINDOW + " applied rounds, at most "
        + "2 x batch (under BSP always batch). --no-rebalance: always batch. Default: on.")
    boolean rebalance;

    @Option(names = "--lr", defaultValue = TrainDefaults.LEARNING_RATE, description = "Learning rate. Default: ${DEFAULT-VALUE}.")
    float learningRate;

    @Option(names = "--momentum", defaultValue = TrainDefaults.MOMENTUM, description = "SGD momentum. Default: ${DEFAULT-VALUE}.")
    float momentum;

    @Option(names = "--lr-schedule", defaultValue = TrainDefaults.LR_SCHEDULE, description = "constant; cosine: the learning rate decays to "
        + "0 over the run's rounds along a half cosine; cooldown: constant, then down to 0 in a straight line over the last 20%% "
        + "of the rounds (by applied step, the same on every worker). Default: ${DEFAULT-VALUE}.")
    String lrSchedule;

    @Option(names = "--stale-momentum", defaultValue = TrainDefaults.STALE_MOMENTUM, description = "compensate: a round computed under a "
        + "bound s > 0 is applied with momentum max(0, m - s/(s+1)) (asynchrony acts as momentum of its own; the bound is "
        + "agreed, so every worker takes the same step); fixed: always --momentum; auto: fixed when workers compute ahead on "
        + "the model their pending steps lead to (--compute-on own or predicted), compensate on the applied one. "
        + "Default: ${DEFAULT-VALUE}.")
    String staleMomentum;

    @Option(names = "--compute-clock", defaultValue = TrainDefaults.COMPUTE_CLOCK, description = "The compute time a worker reports to the "
        + "switch (what slowdown(worker) and lag read): cpu: the processor time its training thread spent on the gradient, plus "
        + "any injected straggling; time the OS gave to other processes is not in it, so with more worker processes than cores a "
        + "preempted worker does not look slow (on a host of its own the two agree); wall: elapsed time, preemption included "
        + "(a worker slowed by a co-located job shows as slow). Records keep the elapsed time either way. Default: ${DEFAULT-VALUE}.")
    String computeClock;

    @Option(names = "--compute-on", defaultValue = TrainDefaults.COMPUTE_ON, description = "The model a worker computes on when it "
        + "computes a round before its last rounds' aggregates are applied (under a bound s > 0; never under BSP): applied: the "
        + "model as applied; own: read-my-writes, the model those rounds' steps lead to with its own gradients in them (scaled "
        + "by 1/N, as in an average) and the momentum carried on; predicted: own, with the others' gradients of each pending "
        + "round predicted as the last applied aggregate. Default: ${DEFAULT-VALUE}.")
    String computeOn;

    @Option(names = "--fresh-wait", defaultValue = TrainDefaults.FRESH_WAIT, description = "How long a worker that may compute ahead "
        + "under a bound s > 0 waits for its pending rounds' aggregates first: compute: up to its own typical compute time (the "
        + "median of its last rounds'; an aggregate later than that waits for a straggler), so it computes ahead only when the "
        + "wait would be long; none: it computes ahead as soon as the bound lets it. Default: ${DEFAULT-VALUE}.")
    String freshWait;

    @Option(names = "--stale-scale", defaultValue = TrainDefaults.STALE_SCALE, description = "How a worker weighs a gradient it "
        + "computed with t rounds pending before it contributes it: none: full weight; inverse: 1/(1+t) (a staleness-aware step; "
        + "every worker still applies the same aggregate). Default: ${DEFAULT-VALUE}.")
    String staleScale;

    @Option(names = "--delay-compensation", defaultValue = TrainDefaults.DELAY_COMPENSATION, description = "DC-ASGD's lambda (Zheng et "
        + "al. 2017): a gradient g computed ahead is corrected before it is sent by lambda x g x g x (v' - v), element by element, "
        + "v the model it was computed on and v' the one the worker would compute on after the aggregates that arrived meanwhile "
        + "(0.04 in the paper); 0: none. Default: ${DEFAULT-VALUE}.")
    float delayCompensation;

    @Option(names = "--step-time", defaultValue = TrainDefaults.STEP_TIME, description = "The modelled accelerator: a step of "
        + "--batch images takes this long (40ms; a batch of b images b / batch of it), or a file of lines "
        + "'model,batch,milliseconds'. The real forward and backward pass runs inside it and the worker waits out the rest, "
        + "parked; straggler factors and pauses lengthen the modelled step, not the host's compute. The run counts every step "
        + "whose real compute overran its modelled time and says whether it was faithful. 0: no model, steps take the host's "
        + "time. Default: ${DEFAULT-VALUE}.")
    String stepTime;

    @Option(names = "--link-rate", defaultValue = "0", description = "A modelled link between each worker and the switch: its rate "
        + "each way (100mbit, 1gbit), paced in user space: every packet waits for the link, takes its size over the rate, and "
        + "arrives --link-delay later; packets handed on over 1 ms late count against the run's fidelity. 0: no model, the host's "
        + "own link. Default: ${DEFAULT-VALUE}.")
    String linkRate;

    @Option(names = "--link-delay", defaultValue = "0", description = "The modelled link's one-way propagation delay (50us; needs "
        + "--link-rate). Default: ${DEFAULT-VALUE}.")
    String linkDelay;

    @Option(names = "--link-loss", defaultValue = "0", description = "The share of the packets each worker sends that its link "
        + "loses, seeded per worker (0.01: 1%%); retransmission recovers them, so a BSP run ends with the lossless run's model. "
        + "Default: ${DEFAULT-VALUE}.")
    double linkLoss;

    @Option(names = "--eval-every", defaultValue = TrainDefaults.EVAL_EVERY,
        description = "Test-set evaluation every E rounds (0: only at the end). Default: ${DEFAULT-VALUE}.")
    int evalEvery;

    @Option(names = "--deferred-eval", negatable = true, defaultValue = "true", fallbackValue = "true", description = "Copy the "
        + "model at each evaluation round (with the time) and evaluate the copies on the test set after training, so evaluation "
        + "takes no time from training nor from JCT and time to accuracy (every worker holds the same sequence of models). "
        + "--no-deferred-eval: evaluate during training, inside the measured times. Default: on.")
    boolean deferredEval;

    @Option(names = "--seed", defaultValue = TrainDefaults.SEED, description = "Seed of models, shards, batches and stragglers. Default: ${DEFAULT-VALUE}.")
    long seed;

    @Option(names = "--data", description = "Directory with the four Fashion-MNIST .gz files. Default: /usr/share/datasets/fashion-mnist "
        + "(apt-get install dataset-fashion-mnist).")
    Path data;

    @Option(names = "--timeout-seconds", defaultValue = TrainDefaults.TIMEOUT_SECONDS,
        description = "A worker gives up when the switch does not answer a round for this long. Default: ${DEFAULT-VALUE}.")
    int timeoutSeconds;

    /** These options as settings (the one validation: {@link TrainSettings.Builder#build()}); neither rounds nor epochs: one epoch. */
    public TrainSettings settings() {
        return TrainSettings.builder()
            .model(ModelKind.parse(model))
            .stragglers(stragglers)
            .rounds(rounds)
            .epochs(epochs)
            .batch(batch)
            .rebalance(rebalance)
            .learningRate(learningRate)
            .momentum(momentum)
            .lrSchedule(LrSchedule.parse("--lr-schedule", lrSchedule))
            .staleMomentum(StaleMomentum.parse("--stale-momentum", staleMomentum))
            .computeClock(ComputeClock.parse("--compute-clock", computeClock))
            .computeOn(ComputeOn.parse("--compute-on", computeOn))
            .freshWait(FreshWait.parse("--fresh-wait", freshWait))
            .staleScale(StaleScale.parse("--stale-scale", staleScale))
            .delayCompensation(delayCompensation)
            .device(DeviceModel.parse("--step-time", stepTime))
            .link(LinkModel.parse(linkRate, linkDelay).withLoss(linkLoss))
            .evalEvery(evalEvery)
            .deferredEval(deferredEval)
            .seed(seed)
            .data(data)
            .timeoutSeconds(timeoutSeconds)
            .build();
    }
}
