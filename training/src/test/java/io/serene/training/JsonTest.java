package io.serene.training;

import org.junit.jupiter.api.Test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** One JSON for every file: records round-trip, floats print as floats, non-finite numbers are null, arrays are arrays. */
class JsonTest {
    @Test
    void aRoundRecordRoundTripsAndItsFloatLossPrintsAsTheFloat() {
        final RoundRecord r = new RoundRecord(1, 7, 2.5, 0.01, 0.0, 0.002, 1, 64, 2.6, 2.7, false, false, 0.3f, 0.8123, 9.5, null);
        final String line = Json.write(r);
        assertThat(line).startsWith("{\"worker\":1,\"round\":7,\"startSeconds\":2.5,").contains("\"loss\":0.3,");
        assertThat(Json.read(line, RoundRecord.class)).isEqualTo(r);
        final RoundRecord skipped = new RoundRecord(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, true, false, null, null, null, null);
        assertThat(Json.read(Json.write(skipped), RoundRecord.class)).isEqualTo(skipped);
    }

    @Test
    void nonFiniteNumbersAreNullAndArraysAreArrays() {
        final Map<String, Object> m = new LinkedHashMap<>();
        m.put("nan", Double.NaN);
        m.put("inf", Float.POSITIVE_INFINITY);
        m.put("ints", new int[] {1, 2});
        m.put("list", List.of(1.5, "a\nb"));
        m.put("small", 1e-9);
        assertThat(Json.write(m)).isEqualTo("{\"nan\":null,\"inf\":null,\"ints\":[1,2],\"list\":[1.5,\"a\\nb\"],\"small\":1.0E-9}");
    }

    @Test
    void readingIgnoresNewMembersAndNamesTheTypeOnGarbage() {
        assertThat(Json.read("{\"worker\":3,\"round\":1,\"future\":true}", RoundRecord.class).worker()).isEqualTo(3);
        assertThatThrownBy(() -> Json.read("{not json", WorkerResult.class)).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("not a WorkerResult");
    }
}
