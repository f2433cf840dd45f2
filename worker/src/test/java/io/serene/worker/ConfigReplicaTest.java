package io.serene.worker;

import io.serene.protocol.Flags;
import io.serene.protocol.Packet;
import io.serene.protocol.ConfigPacket;
import io.serene.protocol.PacketType;
import io.serene.protocol.sync.LateMode;
import io.serene.protocol.sync.SyncConfig;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;

/** The worker's copy of the config table: taken whole per epoch, and the clearance rule over it. */
class ConfigReplicaTest {
    private static final int RING = 64;
    private final ConfigReplica replica = new ConfigReplica();

    private static ConfigPacket config(final int epoch, final int index, final int entries, final int first, final int bound,
                                       final int lateCode) {
        final int length = ConfigPacket.length(1);
        final ByteBuffer b = Packet.allocate(length);
        return new ConfigPacket().wrap(b, 0, length).initHeader(PacketType.CONFIG).jobId(1).configEpoch(epoch).chunk(index)
            .elementCount(entries).firstRound(first).bound(bound).quorum(2).lateMode(lateCode)
            .timeoutNs(SyncConfig.NO_TIMEOUT).bitmapWords(1);
    }

    @Test
    void shouldTakeATableOnlyOnceEveryEntryOfItsEpochArrived() {
        assertThat(replica.fresh()).isFalse();
        assertThat(replica.boundFor(5)).isEqualTo(SyncConfig.UNBOUNDED);
        assertThat(replica.onConfig(config(1, 1, 2, 100, 3, LateMode.DROP.wireCode()))).isTrue();
        assertThat(replica.knownEpoch()).as("one of two entries").isEqualTo(-1);
        assertThat(replica.onConfig(config(1, 0, 2, 0, 0, LateMode.FOLD.wireCode()))).isTrue();
        assertThat(replica.knownEpoch()).isEqualTo(1);
        assertThat(replica.fresh()).isTrue();
        assertThat(replica.boundFor(99)).isZero();
        assertThat(replica.boundFor(100)).isEqualTo(3);
        assertThat(replica.lateModeFor(99)).isEqualTo(LateMode.FOLD);
        assertThat(replica.lateModeFor(150)).isEqualTo(LateMode.DROP);
        // a result stamped with a newer epoch makes the table stale until that epoch arrives whole
        replica.seen(2);
        assertThat(replica.fresh()).isFalse();
        assertThat(replica.cleared(0, -1, RING)).as("not cleared on a stale table").isFalse();
    }

    @Test
    void shouldTakeWbspFromTheBusyFlag() {
        assertThat(replica.busyFor(0)).as("no table yet").isFalse();
        replica.onConfig(config(1, 0, 2, 0, 0, LateMode.FOLD.wireCode()));
        replica.onConfig(config(1, 1, 2, 10, 0, LateMode.FOLD.wireCode()).flags(Flags.BUSY));
        assertThat(replica.busyFor(9)).isFalse();
        assertThat(replica.busyFor(10)).isTrue();
        assertThat(replica.cleared(11, 9, RING)).as("WBSP clears as BSP does").isFalse();
        assertThat(replica.cleared(11, 10, RING)).isTrue();
    }

    @Test
    void shouldClearARoundByTheBoundInForceForIt() {
        replica.onConfig(config(1, 0, 2, 0, 0, LateMode.FOLD.wireCode()));
        replica.onConfig(config(1, 1, 2, 10, 2, LateMode.FOLD.wireCode()));
        assertThat(replica.cleared(5, 4, RING)).isTrue();
        assertThat(replica.cleared(6, 4, RING)).as("BSP before round 10").isFalse();
        assertThat(replica.cleared(12, 9, RING)).as("SSP(2) from round 10: R >= 12 - 2 - 1").isTrue();
        assertThat(replica.cleared(13, 9, RING)).isFalse();
    }

    @Test
    void shouldRefuseAMalformedEntry() {
        assertThat(replica.onConfig(config(1, 0, 1, 0, 0, 7))).as("unknown late mode").isFalse();
        assertThat(replica.onConfig(config(1, 3, 2, 0, 0, 1))).as("index beyond the count").isFalse();
        assertThat(replica.knownEpoch()).isEqualTo(-1);
    }
}
