package io.serene.training;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonSerializer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.module.SimpleModule;

import java.io.IOException;

/**
 * Serene's JSON, one line per value, through one Jackson mapper: records, maps, lists, arrays,
 * strings, numbers and booleans; a float prints as the float it is (0.3, not its double's
 * expansion); a non-finite number is null; reading ignores members a newer writer added.
 */
public final class Json {
    /**
     * The version of the summaries' layout ({@code schemaVersion}, first member of every summary:
     * serene train's, serene experiment's, serene sim's and bench's JSON). Files without it are version 1.
     */
    public static final int SCHEMA_VERSION = 2;

    /** The mapper every writer and reader of Serene's files uses. */
    public static final ObjectMapper MAPPER = JsonMapper.builder()
        .addModule(new SimpleModule("finite-numbers")
            .addSerializer(Double.class, new Finite<>())
            .addSerializer(Double.TYPE, new Finite<>())
            .addSerializer(Float.class, new Finite<>())
            .addSerializer(Float.TYPE, new Finite<>()))
        .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
        .build();

    private Json() {
    }

    /** One line of JSON. */
    public static String write(final Object value) {
        try {
            return MAPPER.writeValueAsString(value);
        } catch (final JsonProcessingException ex) {
            throw new IllegalArgumentException("cannot write " + value.getClass().getSimpleName() + " as JSON: " + ex.getMessage(), ex);
        }
    }

    /** Reads one value of a type from JSON text; malformed text is an IllegalArgumentException naming the type. */
    public static <T> T read(final String text, final Class<T> type) {
        try {
            return MAPPER.readValue(text, type);
        } catch (final JsonProcessingException ex) {
            throw new IllegalArgumentException("not a " + type.getSimpleName() + ": " + ex.getOriginalMessage(), ex);
        }
    }

    /** Doubles and floats as Jackson writes them, but null when not finite (JSON has no NaN). */
    private static final class Finite<T extends Number> extends JsonSerializer<T> {
        @Override
        public void serialize(final T value, final JsonGenerator gen, final SerializerProvider provider) throws IOException {
            if (value instanceof Float) {
                if (Float.isFinite((Float) value)) {
                    gen.writeNumber((Float) value);
                } else {
                    gen.writeNull();
                }
            } else if (Double.isFinite(value.doubleValue())) {
                gen.writeNumber(value.doubleValue());
            } else {
                gen.writeNull();
            }
        }
    }
}
