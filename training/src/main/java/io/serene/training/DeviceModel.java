package io.serene.training;

import io.serene.protocol.Units;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * The modelled accelerator (serene worker --step-time): how long a step of a model over a batch
 * takes on the device a run models. A worker's real forward and backward pass runs inside that
 * time and the worker waits out the rest ({@link ModelledSteps}), so a run's clock is the
 * cluster's, not this host's. {@link #HOST} (step time 0) models nothing: a step takes what the
 * host takes.
 *
 * <pre>
 *   0                 no model: the host's speed
 *   40ms, 1.5s, 500us a step of the run's batch takes this long; a batch of b images b / batch of it
 *   FILE              lines "model,batch,milliseconds" (# comments): the run's model's steps,
 *                     linear in the batch between the listed ones, proportional beyond them
 * </pre>
 */
public final class DeviceModel {
    public static final String SYNTAX = "0 (the host's speed), a duration (40ms, 1.5s, 500us) for a step of --batch images, "
        + "or a file of lines 'model,batch,milliseconds'";

    /** No modelled device: steps take the host's time. */
    public static final DeviceModel HOST = new DeviceModel("0", 0, Map.of());

    private final String text;
    /** A duration's step of the run's batch, in nanoseconds (0: none, or a file's steps). */
    private final long batchStepNs;
    /** A file's steps: per model, step time in nanoseconds by batch. */
    private final Map<String, TreeMap<Integer, Long>> steps;

    private DeviceModel(final String text, final long batchStepNs, final Map<String, TreeMap<Integer, Long>> steps) {
        this.text = text;
        this.batchStepNs = batchStepNs;
        this.steps = steps;
    }

    /** Whether {@code --step-time}'s value names a file (anything not starting as a number does). */
    public static boolean namesFile(final String value) {
        final String v = value.trim();
        return !v.isEmpty() && !Character.isDigit(v.charAt(0)) && v.charAt(0) != '.';
    }

    /** Parses {@code --step-time}'s value; errors name {@code what} (a flag or a key) and the syntax. */
    public static DeviceModel parse(final String what, final String value) {
        if (value == null || value.isBlank()) {
            throw new IllegalArgumentException(what + " is empty (expected " + SYNTAX + ")");
        }
        final String v = value.trim();
        if (v.equals("0")) {
            return HOST;
        }
        if (namesFile(v)) {
            return file(what, v);
        }
        final long ns = Units.durationNs(what, v);
        if (ns <= 0) {
            throw new IllegalArgumentException(what + " must be 0 or a positive duration, was '" + value + "'");
        }
        return new DeviceModel(v, ns, Map.of());
    }

    /** Whether a device is modelled (false: steps take the host's time). */
    public boolean modelled() {
        return batchStepNs > 0 || !steps.isEmpty();
    }

    /**
     * The modelled time of a step of {@code model} over {@code images} images, in a run whose batch
     * is {@code batch}; 0 when nothing is modelled.
     */
    public long stepNs(final ModelKind model, final int images, final int batch) {
        if (!modelled()) {
            return 0;
        }
        if (batchStepNs > 0) {
            return Math.round((double) batchStepNs * images / batch);
        }
        final TreeMap<Integer, Long> byBatch = steps.get(model.toString());
        if (byBatch == null) {
            throw new IllegalArgumentException("step-time file " + text + " has no line for model " + model);
        }
        final Map.Entry<Integer, Long> below = byBatch.floorEntry(images);
        final Map.Entry<Integer, Long> above = byBatch.ceilingEntry(images);
        if (below == null || above == null || below.getKey().equals(above.getKey())) {
            final Map.Entry<Integer, Long> near = below != null ? below : above;
            return Math.round((double) near.getValue() * images / near.getKey());
        }
        final double at = (double) (images - below.getKey()) / (above.getKey() - below.getKey());
        return Math.round(below.getValue() + at * (above.getValue() - below.getValue()));
    }

    /** The text it was parsed from (what {@code --step-time} takes back). */
    public String text() {
        return text;
    }

    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(final Object o) {
        return o instanceof DeviceModel other && other.text.equals(text) && other.batchStepNs == batchStepNs
            && other.steps.equals(steps);
    }

    @Override
    public int hashCode() {
        return text.hashCode();
    }

    private static DeviceModel file(final String what, final String name) {
        final Path path = Path.of(name);
        final java.util.List<String> lines;
        try {
            lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new IllegalArgumentException(what + ": '" + name + "' is neither a duration nor a readable step-time file ("
                + ex.getClass().getSimpleName() + "); expected " + SYNTAX);
        }
        final Map<String, TreeMap<Integer, Long>> steps = new TreeMap<>();
        for (int n = 0; n < lines.size(); n++) {
            final String line = lines.get(n).trim();
            if (line.isEmpty() || line.startsWith("#")) {
                continue;
            }
            final String[] fields = line.split("\\s*,\\s*");
            try {
                if (fields.length != 3) {
                    throw new NumberFormatException();
                }
                final String model = ModelKind.parse(fields[0]).toString();
                final int batch = Integer.parseInt(fields[1]);
                final double ms = Double.parseDouble(fields[2]);
                if (batch < 1 || !(ms > 0) || ms > 3.6e6) {
                    throw new NumberFormatException();
                }
                steps.computeIfAbsent(model, k -> new TreeMap<>()).put(batch, Math.round(ms * 1e6));
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException("step-time file " + name + " line " + (n + 1) + ": expected 'model,batch,milliseconds' "
                    + "(a model of serene train, a batch >= 1, milliseconds > 0), got '" + line + "'");
            }
        }
        if (steps.isEmpty()) {
            throw new IllegalArgumentException("step-time file " + name + " has no lines 'model,batch,milliseconds'");
        }
        return new DeviceModel(name, 0, steps);
    }
}
