package io.serene.training;

import io.serene.training.data.FashionMnist;
import io.serene.transport.LinkModel;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * How a run's workers train: every option {@code serene train}, {@code serene worker},
 * {@code serene demo} and experiment files share, as one immutable value. {@link #builder()} starts
 * from {@link TrainDefaults}; {@link Builder#build()} is the one validation, failing with a message
 * that names the option. {@link #arguments()} turns the settings into a worker process's flags, and
 * the command line's options (harness {@code TrainingOptions}) turn them back into equal settings.
 *
 * @param rounds    rounds to run, or null to run {@code epochs} passes over the shard
 * @param epochs    passes over each worker's shard, or null when {@code rounds} is given
 * @param stragglers the straggler profile ({@link StragglerProfile#SYNTAX}), seeded by {@code seed}
 * @param computeOn  the model a worker computing ahead of its pending rounds computes on (docs/sync.md)
 * @param freshWait  how long a worker that may compute ahead waits for its pending aggregates first
 * @param staleScale how a worker weighs a gradient it computed ahead before contributing it
 * @param delayCompensation DC-ASGD's lambda for a gradient computed ahead (0: none)
 * @param device    the modelled accelerator ({@code --step-time}; {@link DeviceModel#HOST}: the host's speed)
 * @param link      the modelled link to the switch ({@code --link-rate}, {@code --link-delay}; {@link LinkModel#NONE}: the host's)
 * @param data      the Fashion-MNIST directory
 */
public record TrainSettings(ModelKind model, String stragglers, Integer rounds, Double epochs, int batch, boolean rebalance,
                            float learningRate, float momentum, LrSchedule lrSchedule, StaleMomentum staleMomentum,
                            ComputeClock computeClock, ComputeOn computeOn, FreshWait freshWait, StaleScale staleScale,
                            float delayCompensation, DeviceModel device, LinkModel link, int evalEvery,
                            boolean deferredEval, long seed,
                            Path data, int timeoutSeconds) {
    /** Validates; called by {@link Builder#build()}. */
    public TrainSettings {
        if (model == null || stragglers == null || lrSchedule == null || staleMomentum == null || computeClock == null
            || computeOn == null || freshWait == null || staleScale == null || device == null || link == null || data == null) {
            throw new IllegalArgumentException("model, stragglers, schedules, clock and data directory must be set");
        }
        RunLength.check(batch, evalEvery, rounds, epochs);
        if (rounds == null && epochs == null) {
            throw new IllegalArgumentException("give --rounds or --epochs");
        }
        if (!(learningRate > 0) || Float.isInfinite(learningRate)) {
            throw new IllegalArgumentException("--lr must be positive, was " + learningRate);
        }
        if (!(momentum >= 0 && momentum < 1)) {
            throw new IllegalArgumentException("--momentum must be in [0, 1), was " + momentum);
        }
        if (!(delayCompensation >= 0) || Float.isInfinite(delayCompensation)) {
            throw new IllegalArgumentException("--delay-compensation must be >= 0, was " + delayCompensation);
        }
        if (timeoutSeconds <= 0) {
            throw new IllegalArgumentException("--timeout-seconds must be positive, was " + timeoutSeconds);
        }
        // the syntax; a profile naming more workers than a job has is refused by profile(workers)
        if (StragglerProfile.parse(stragglers, seed).slowsLinks() && !link.modelled()) {
            throw new IllegalArgumentException("--stragglers " + stragglers + " slows a link: it needs a modelled link (--link-rate)");
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder holding these settings, to change some of them. */
    public Builder toBuilder() {
        return new Builder().model(model).stragglers(stragglers).rounds(rounds).epochs(epochs).batch(batch).rebalance(rebalance)
            .learningRate(learningRate).momentum(momentum).lrSchedule(lrSchedule).staleMomentum(staleMomentum)
            .computeClock(computeClock).computeOn(computeOn).freshWait(freshWait).staleScale(staleScale).evalEvery(evalEvery)
            .delayCompensation(delayCompensation).device(device).link(link).deferredEval(deferredEval).seed(seed).data(data)
            .timeoutSeconds(timeoutSeconds);
    }

    /** The momentum rule in force ({@link StaleMomentum#AUTO} resolved for {@link #computeOn}). */
    public StaleMomentum momentumRule() {
        return staleMomentum.resolve(computeOn);
    }

    /** Rounds of a worker with a shard of {@code shard} images. */
    public int roundsFor(final int shard) {
        return RunLength.rounds(shard, batch, rounds, epochs);
    }

    /** The straggler profile for a job of {@code workers}, seeded by {@link #seed()}. */
    public StragglerProfile profile(final int workers) {
        return StragglerProfile.parse(stragglers, seed, workers);
    }

    /** These settings as {@code serene worker} flags; parsing them back gives equal settings. */
    public List<String> arguments() {
        final List<String> a = new ArrayList<>(List.of("--model", model.toString()));
        if (rounds != null) {
            a.addAll(List.of("--rounds", "" + rounds));
        } else {
            a.addAll(List.of("--epochs", "" + epochs));
        }
        a.addAll(List.of("--batch", "" + batch, rebalance ? "--rebalance" : "--no-rebalance", "--lr", "" + learningRate,
            "--momentum", "" + momentum, "--lr-schedule", lrSchedule.text(), "--stale-momentum", staleMomentum.text(),
            "--compute-clock", computeClock.text(), "--compute-on", computeOn.text(), "--fresh-wait", freshWait.text(),
            "--stale-scale", staleScale.text(), "--delay-compensation", "" + delayCompensation, "--step-time", device.text(),
            "--link-rate", link.rateText(), "--link-delay", link.delayText(), "--link-loss", "" + link.loss(),
            "--eval-every", "" + evalEvery,
            deferredEval ? "--deferred-eval" : "--no-deferred-eval", "--seed", "" + seed, "--stragglers", stragglers,
            "--data", data.toString(), "--timeout-seconds", "" + timeoutSeconds));
        return a;
    }

    /** How the workers train, as a run's summary records it (part of its "run" member). */
    public Map<String, Object> summary() {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("batch", batch);
        m.put("rebalance", rebalance);
        m.put("learningRate", Double.parseDouble(Float.toString(learningRate)));
        m.put("momentum", Double.parseDouble(Float.toString(momentum)));
        m.put("lrSchedule", lrSchedule.text());
        m.put("staleMomentum", staleMomentum.text());
        m.put("computeClock", computeClock.text());
        m.put("computeOn", computeOn.text());
        m.put("freshWait", freshWait.text());
        m.put("staleScale", staleScale.text());
        m.put("delayCompensation", Double.parseDouble(Float.toString(delayCompensation)));
        m.put("stepTime", device.text());
        m.put("linkRate", link.rateText());
        m.put("linkDelay", link.delayText());
        if (link.loss() > 0) {
            m.put("linkLoss", link.loss());
        }
        m.put("evalEvery", evalEvery);
        m.put("evaluation", deferredEval ? "deferred" : "inline");
        return m;
    }

    /** Fluent setters over {@link TrainDefaults}; {@link #build()} validates. */
    public static final class Builder {
        private ModelKind model = ModelKind.parse(TrainDefaults.MODEL);
        private String stragglers = TrainDefaults.STRAGGLERS;
        private Integer rounds;
        private Double epochs;
        private int batch = TrainDefaults.batch();
        private boolean rebalance = true;
        private float learningRate = TrainDefaults.learningRate();
        private float momentum = TrainDefaults.momentum();
        private LrSchedule lrSchedule = LrSchedule.parse("--lr-schedule", TrainDefaults.LR_SCHEDULE);
        private StaleMomentum staleMomentum = StaleMomentum.parse("--stale-momentum", TrainDefaults.STALE_MOMENTUM);
        private ComputeClock computeClock = ComputeClock.parse("--compute-clock", TrainDefaults.COMPUTE_CLOCK);
        private ComputeOn computeOn = ComputeOn.parse("--compute-on", TrainDefaults.COMPUTE_ON);
        private FreshWait freshWait = FreshWait.parse("--fresh-wait", TrainDefaults.FRESH_WAIT);
        private StaleScale staleScale = StaleScale.parse("--stale-scale", TrainDefaults.STALE_SCALE);
        private float delayCompensation = Float.parseFloat(TrainDefaults.DELAY_COMPENSATION);
        private DeviceModel device = DeviceModel.parse("--step-time", TrainDefaults.STEP_TIME);
        private LinkModel link = LinkModel.NONE;
        private int evalEvery = TrainDefaults.evalEvery();
        private boolean deferredEval = true;
        private long seed = TrainDefaults.seed();
        private Path data;
        private int timeoutSeconds = TrainDefaults.timeoutSeconds();

        private Builder() {
        }

        public Builder model(final ModelKind value) {
            model = value;
            return this;
        }

        public Builder stragglers(final String value) {
            stragglers = value;
            return this;
        }

        /** Rounds to run (null: by epochs; neither given: one epoch). */
        public Builder rounds(final Integer value) {
            rounds = value;
            return this;
        }

        public Builder epochs(final Double value) {
            epochs = value;
            return this;
        }

        public Builder batch(final int value) {
            batch = value;
            return this;
        }

        public Builder rebalance(final boolean value) {
            rebalance = value;
            return this;
        }

        public Builder learningRate(final float value) {
            learningRate = value;
            return this;
        }

        public Builder momentum(final float value) {
            momentum = value;
            return this;
        }

        public Builder lrSchedule(final LrSchedule value) {
            lrSchedule = value;
            return this;
        }

        public Builder staleMomentum(final StaleMomentum value) {
            staleMomentum = value;
            return this;
        }

        public Builder computeClock(final ComputeClock value) {
            computeClock = value;
            return this;
        }

        public Builder computeOn(final ComputeOn value) {
            computeOn = value;
            return this;
        }

        public Builder freshWait(final FreshWait value) {
            freshWait = value;
            return this;
        }

        public Builder staleScale(final StaleScale value) {
            staleScale = value;
            return this;
        }

        public Builder delayCompensation(final float value) {
            delayCompensation = value;
            return this;
        }

        /** The modelled accelerator ({@link DeviceModel#HOST}: none). */
        public Builder device(final DeviceModel value) {
            device = value;
            return this;
        }

        /** The modelled link to the switch ({@link LinkModel#NONE}: none). */
        public Builder link(final LinkModel value) {
            link = value;
            return this;
        }

        public Builder evalEvery(final int value) {
            evalEvery = value;
            return this;
        }

        public Builder deferredEval(final boolean value) {
            deferredEval = value;
            return this;
        }

        public Builder seed(final long value) {
            seed = value;
            return this;
        }

        /** The dataset directory (null: where Debian installs it). */
        public Builder data(final Path value) {
            data = value;
            return this;
        }

        public Builder timeoutSeconds(final int value) {
            timeoutSeconds = value;
            return this;
        }

        /** The settings, validated; a run given neither rounds nor epochs runs one epoch. */
        public TrainSettings build() {
            final Double passes = rounds == null && epochs == null ? Double.valueOf(1) : epochs;
            return new TrainSettings(model, stragglers, rounds, passes, batch, rebalance, learningRate, momentum, lrSchedule,
                staleMomentum, computeClock, computeOn, freshWait, staleScale, delayCompensation, device, link, evalEvery, deferredEval, seed,
                data != null ? data : FashionMnist.DEBIAN_DIR,
                timeoutSeconds);
        }
    }
}
