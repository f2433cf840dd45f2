package io.serene.dataplane;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class JobTableTest {
    /** Random puts and removes agree with a HashMap (backward-shift deletion keeps probes intact). */
    @Property
    void behavesLikeAMap(@ForAll @Size(max = 200) final List<@IntRange(min = -20, max = 20) Integer> ops) {
        final JobTable table = new JobTable(32);
        final Map<Integer, Integer> model = new HashMap<>();
        int value = 0;
        for (final int op : ops) {
            final int key = Math.abs(op) * 0x10001;
            if (op >= 0 && (model.containsKey(key) || model.size() < 32)) {
                table.put(key, value);
                model.put(key, value);
                value++;
            } else {
                table.remove(key);
                model.remove(key);
            }
            assertThat(table.size()).isEqualTo(model.size());
        }
        for (int k = 0; k <= 20; k++) {
            final int key = k * 0x10001;
            assertThat(table.get(key)).isEqualTo(model.getOrDefault(key, JobTable.MISSING));
        }
    }
}
