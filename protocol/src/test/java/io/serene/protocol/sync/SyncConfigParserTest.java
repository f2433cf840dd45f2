package io.serene.protocol.sync;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.junit.jupiter.api.Test;

import java.util.BitSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SyncConfigParserTest {
    @Test
    void presetsMeanWhatDesignSaysTheyMean() {
        final SyncConfig.Resolved bsp = SyncConfigParser.parse("bsp").resolve(4);
        assertThat(bsp.bound).isZero();
        assertThat(bsp.required.cardinality()).isEqualTo(4);
        assertThat(bsp.quorum).isEqualTo(4);
        assertThat(bsp.timeoutNs).isEqualTo(SyncConfig.NO_TIMEOUT);
        assertThat(SyncConfigParser.parse("ssp:3").resolve(4).bound).isEqualTo(3);
        assertThat(SyncConfigParser.parse("asp").resolve(4).bound).isEqualTo(SyncConfig.UNBOUNDED);
        final SyncConfig.Resolved fastest = SyncConfigParser.parse("fastest:14").resolve(16);
        assertThat(fastest.required.isEmpty()).isTrue();
        assertThat(fastest.quorum).isEqualTo(14);
        assertThat(SyncConfigParser.parse("timeout:50").resolve(4).timeoutNs).isEqualTo(50_000_000L);
        assertThat(SyncConfigParser.parse("timeout:0.25").timeoutNs()).isEqualTo(250_000L);
        final SyncConfig relative = SyncConfigParser.parse("bsp+timeout:30%+drop");
        assertThat(relative.timeoutPercent()).isEqualTo(30);
        assertThat(relative.timeoutNs()).isEqualTo(SyncConfig.NO_TIMEOUT);
        assertThat(relative.withTimeoutNs(5_000_000L).timeoutPercent()).as("an absolute timeout replaces it").isZero();
        assertThat(relative.withoutTimeout()).isEqualTo(SyncConfigParser.parse("bsp+drop"));
        assertThatThrownBy(() -> relative.resolve(4)).hasMessageContaining("timeout:30% is relative to the round time")
            .hasMessageContaining("policy file");
        final SyncConfig.Resolved exclude = SyncConfigParser.parse("exclude:1,3").resolve(4);
        assertThat(exclude.required).isEqualTo(BitSet.valueOf(new long[] {0b0101}));
        assertThat(exclude.quorum).isEqualTo(2);
        assertThat(SyncConfigParser.parse("bsp").lateMode()).isEqualTo(LateMode.FOLD);
        assertThat(SyncConfigParser.parse("exclude:2+drop").lateMode()).isEqualTo(LateMode.DROP);
    }

    @Test
    void partsCombine() {
        final SyncConfig c = SyncConfigParser.parse("ssp:2+timeout:50");
        assertThat(c.bound()).isEqualTo(2);
        assertThat(c.timeoutNs()).isEqualTo(50_000_000L);
        assertThat(SyncConfigParser.parse("fastest:3+ssp:4")).isEqualTo(SyncConfigParser.parse("ssp:4+fastest:3"));
    }

    @Test
    void badTextGetsAnErrorNamingTheBadPart() {
        assertThatThrownBy(() -> SyncConfigParser.parse("sspp:2+timeout:50"))
            .hasMessage("unknown part 'sspp:2' in sync config 'sspp:2+timeout:50' (" + SyncConfigParser.EXPECTED + ")");
        assertThatThrownBy(() -> SyncConfigParser.parse("ssp:x")).hasMessage("'ssp:x' in sync config 'ssp:x': 'x' is not a whole number");
        assertThatThrownBy(() -> SyncConfigParser.parse("ssp")).hasMessageContaining("'ssp' in sync config 'ssp' needs a number");
        assertThatThrownBy(() -> SyncConfigParser.parse("fastest:0")).hasMessageContaining("must be >= 1");
        assertThatThrownBy(() -> SyncConfigParser.parse("timeout:-5")).hasMessageContaining("must be > 0");
        assertThatThrownBy(() -> SyncConfigParser.parse("timeout:0%")).hasMessageContaining("a whole percent of the round time from 1% to 1000%");
        assertThatThrownBy(() -> SyncConfigParser.parse("timeout:2.5%")).hasMessageContaining("a whole percent");
        assertThatThrownBy(() -> SyncConfigParser.parse("timeout:%")).hasMessageContaining("a whole percent");
        assertThatThrownBy(() -> SyncConfigParser.parse("bsp:3")).hasMessageContaining("takes no argument");
        assertThatThrownBy(() -> SyncConfigParser.parse("bsp+ssp:2")).hasMessageContaining("more than one of bsp, ssp, asp");
        assertThatThrownBy(() -> SyncConfigParser.parse("bsp+")).hasMessageContaining("empty part");
        assertThatThrownBy(() -> SyncConfigParser.parse("exclude:a")).hasMessageContaining("'a' is not a worker id");
        assertThatThrownBy(() -> SyncConfigParser.parse(" ")).hasMessageContaining("empty sync config");
        assertThatThrownBy(() -> SyncConfigParser.parse("fastest:20").resolve(16)).hasMessageContaining("quorum 20 exceeds");
        assertThatThrownBy(() -> SyncConfigParser.parse("exclude:9").resolve(4)).hasMessageContaining("excluded worker 9");
    }

    @Test
    void schedulesApplyFromTheirFirstRound() {
        final SyncSchedule schedule = SyncSchedule.parse("bsp@0,ssp:3@100,fastest:14@200,exclude:1,2@250,bsp@300");
        assertThat(schedule.configFor(0)).isEqualTo(SyncConfig.bsp());
        assertThat(schedule.configFor(99)).isEqualTo(SyncConfig.bsp());
        assertThat(schedule.configFor(100).bound()).isEqualTo(3);
        assertThat(schedule.configFor(220).quorum()).isEqualTo(14);
        assertThat(schedule.configFor(260).excluded().cardinality()).isEqualTo(2);
        assertThat(schedule.configFor(5000)).isEqualTo(SyncConfig.bsp());
        assertThat(SyncSchedule.parse("ssp:2").configFor(7).bound()).isEqualTo(2);
        assertThatThrownBy(() -> SyncSchedule.parse("bsp@5")).hasMessageContaining("starts at round 0");
        assertThatThrownBy(() -> SyncSchedule.parse("bsp@0,ssp:2@10,bsp@10")).hasMessageContaining("must increase");
        assertThatThrownBy(() -> SyncSchedule.parse("bsp@0,ssp:2@x")).hasMessageContaining("bad first round 'x'");
        assertThatThrownBy(() -> SyncSchedule.parse("bsp@0,bsp+timeout:30%@20"))
            .hasMessageContaining("'bsp+timeout:30%@20': timeout:30% is relative to the round time").hasMessageContaining("policy file");
    }

    @Property
    void canonicalTextRoundTrips(@ForAll("configs") final SyncConfig config) {
        assertThat(SyncConfigParser.parse(config.toString())).isEqualTo(config);
    }

    @Provide
    Arbitrary<SyncConfig> configs() {
        final Arbitrary<Integer> bound = Arbitraries.oneOf(Arbitraries.integers().between(0, 50),
            Arbitraries.just(SyncConfig.UNBOUNDED));
        final Arbitrary<Integer> quorum = Arbitraries.oneOf(Arbitraries.integers().between(1, 64),
            Arbitraries.just(SyncConfig.QUORUM_OF_REQUIRED));
        // negative: a relative timeout of that many percent
        final Arbitrary<Long> timeout = Arbitraries.oneOf(Arbitraries.longs().between(1, 10_000_000_000L),
            Arbitraries.just(SyncConfig.NO_TIMEOUT), Arbitraries.longs().between(-SyncConfig.MAX_TIMEOUT_PERCENT, -1));
        final Arbitrary<BitSet> excluded = Arbitraries.integers().between(0, 63).set().ofMaxSize(4)
            .map(ids -> {
                final BitSet b = new BitSet();
                ids.forEach(b::set);
                return b;
            });
        return Combinators.combine(bound, quorum, timeout, excluded, Arbitraries.of(LateMode.class), Arbitraries.of(true, false))
            .as((s, k, t, ex, late, none) -> {
                SyncConfig c = SyncConfig.bsp().withBound(s).excluding(ex).withLateMode(late);
                if (none) {
                    c = c.requiringNone().withQuorum(k == SyncConfig.QUORUM_OF_REQUIRED ? 1 : k);
                } else {
                    c = c.withQuorum(k);
                }
                return t == SyncConfig.NO_TIMEOUT ? c : t < 0 ? c.withTimeoutPercent((int) -t) : c.withTimeoutNs(t);
            });
    }

    @Test
    void wbspIsBspWithBusyWorkers() {
        assertThat(SyncConfigParser.parse("wbsp")).isEqualTo(SyncConfig.bsp().withBusy(true));
        assertThat(SyncConfigParser.parse("wbsp").bound()).isZero();
        assertThat(SyncConfigParser.parse("wbsp").toString()).isEqualTo("bsp+busy");
        assertThat(SyncConfigParser.parse("ssp:2+busy+exclude:1").busy()).isTrue();
        assertThat(SyncConfigParser.parse(SyncConfigParser.parse("ssp:2+busy+drop").toString())).isEqualTo(SyncConfigParser.parse("ssp:2+busy+drop"));
        assertThat(SyncConfigParser.parse("bsp").busy()).isFalse();
        assertThat(SyncConfigParser.parse("wbsp")).isNotEqualTo(SyncConfig.bsp());
        assertThatThrownBy(() -> SyncConfigParser.parse("wbsp+ssp:1")).hasMessageContaining("more than one of");
        assertThatThrownBy(() -> SyncConfigParser.parse("wbsp:2")).hasMessageContaining("takes no argument");
    }

    @Test
    void pspIsABoundWithASampleOfTheRequiredWorkers() {
        assertThat(SyncConfigParser.parse("psp:2")).isEqualTo(SyncConfig.bsp().withSample(2));
        assertThat(SyncConfigParser.parse("psp:2,3")).isEqualTo(SyncConfig.ssp(3).withSample(2));
        assertThat(SyncConfigParser.parse("ssp:3+sample:2+drop").toString()).isEqualTo("ssp:3+sample:2+drop");
        assertThat(SyncConfigParser.parse(SyncConfigParser.parse("psp:2,3").toString())).isEqualTo(SyncConfigParser.parse("psp:2,3"));
        final SyncConfig.Resolved r = SyncConfigParser.parse("psp:3").resolve(8);
        assertThat(r.quorum).as("the sample's size").isEqualTo(3);
        assertThat(r.requiredFor(1, 7).cardinality()).isEqualTo(3);
        assertThatThrownBy(() -> SyncConfigParser.parse("psp:9").resolve(8)).hasMessage("PSP sample 9 exceeds the 8 required workers");
        assertThatThrownBy(() -> SyncConfigParser.parse("psp:2+ssp:1")).hasMessageContaining("more than one of");
        assertThatThrownBy(() -> SyncConfigParser.parse("psp:2,3,4")).hasMessageContaining("psp:2 or psp:2,3");
        assertThatThrownBy(() -> SyncConfigParser.parse("fastest:2+sample:1").resolve(4)).hasMessageContaining("fastest-k requires none");
    }
}
