package io.serene.worker;

import io.serene.protocol.Counters;
import io.serene.protocol.Outbox;
import io.serene.protocol.sync.StepLayout;

/**
 * The worker's sending: which step goes next (the next one in order, once its round is submitted
 * and cleared, the window has room, the slot's previous use is released and a value step's
 * exponent is known), the steps released without this worker passed over (its values there folded
 * or dropped, its compute time reported once a round), and every packet signed on its way out.
 */
final class StepPump {
    private final WorkerContext ctx;
    private final Counters<WorkerCounter> counters;
    private final SendWindow window;
    private final ConfigReplica config;
    private final Clearance clearance;
    private final RoundAssembler assembler;
    private final LateLedger ledger;
    private final StepEncoder encoder;
    private final WorkerAuth auth;
    /** Known after the JOIN_ACK. */
    private StepLayout layout;

    StepPump(final WorkerContext ctx, final Counters<WorkerCounter> counters, final SendWindow window, final ConfigReplica config,
             final Clearance clearance, final RoundAssembler assembler, final LateLedger ledger, final StepEncoder encoder,
             final WorkerAuth auth) {
        this.ctx = ctx;
        this.counters = counters;
        this.window = window;
        this.config = config;
        this.clearance = clearance;
        this.assembler = assembler;
        this.ledger = ledger;
        this.encoder = encoder;
        this.auth = auth;
    }

    void layout(final StepLayout stepLayout) {
        this.layout = stepLayout;
    }

    /** Sends every step that may go now, of the {@code submitted} rounds; arms the tail probe when it stops for want of rounds. */
    void pump(final long nowNs, final Outbox outbox, final int submitted) {
        while (true) {
            final long seq = window.nextSeq();
            final int round = layout.round(seq);
            if (round >= submitted || !clearance.cleared(round)) {
                window.armTailProbe(nowNs);
                return;
            }
            final int t = layout.step(seq);
            final RoundAssembler.RoundState st = assembler.state(round);
            if (assembler.stepReleased(seq)) {
                // released without this worker: nothing to send
                if (layout.isValueStep(t) && !st.buffers.mineResolved[layout.chunkOf(t)]) {
                    resolveLate(st, layout.chunkOf(t));
                }
                if (!window.skipNext()) {
                    return;
                }
                counters.increment(WorkerCounter.STEPS_SKIPPED);
                if (t == 0 && st.computeNs > 0) {
                    // but its compute time, once a round: the switch hears how it is doing while it is left out
                    send(encoder.report(layout, seq, round, st.computeNs, config.knownEpoch()), outbox);
                    counters.increment(WorkerCounter.REPORTS_SENT);
                }
                continue;
            }
            if (window.full()) {
                return;
            }
            // the slot's previous use must be released before the switch accepts this one
            final long previous = StepLayout.previousUse(seq, layout.poolSize());
            if (previous >= 0 && !assembler.stepReleased(previous)) {
                return;
            }
            if (layout.isValueStep(t) && !st.buffers.expKnown[layout.chunkOf(t)]) {
                return;
            }
            window.sendNext(nowNs);
            sendStep(seq, st, t, outbox);
            counters.increment(WorkerCounter.STEPS_SENT);
        }
    }

    /** This worker's values for a chunk did not make it into the release: fold or drop them, as the round's late mode says. */
    void resolveLate(final RoundAssembler.RoundState st, final int chunk) {
        ledger.late(st.buffers, layout, chunk, config.lateModeFor(st.round));
    }

    /** Sends step {@code seq}, step {@code t} of round {@code st}, again or for the first time. */
    void sendStep(final long seq, final RoundAssembler.RoundState st, final int t, final Outbox outbox) {
        send(encoder.step(layout, seq, st.round, t, st.buffers, st.computeNs, config.knownEpoch()), outbox);
    }

    /** Signs and sends the packet of {@code length} bytes composed in the encoder's buffer, to the switch. */
    void send(final int length, final Outbox outbox) {
        auth.seal(encoder.buffer(), length);
        outbox.send(ctx.switchPort(), encoder.buffer(), 0, length);
        counters.increment(WorkerCounter.PACKETS_OUT);
    }
}
