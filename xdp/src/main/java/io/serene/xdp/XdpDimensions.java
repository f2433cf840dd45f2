package io.serene.xdp;

import io.serene.dataplane.SwitchMemory;
import io.serene.protocol.table.TableModel;

/**
 * The XDP program's compile-time dimensions, the Java switch's: jobs J, workers a job N (bitmap words W),
 * slots a shadow set P, elements a chunk K, rounds in the release ring G, config entries a job E. They size
 * its maps and bound its loops, as a P4 program's register sizes are fixed when it is compiled.
 */
public record XdpDimensions(int jobs, int workers, int pool, int chunkElements, int ring, int entries) {
    /** The most elements a chunk may have here: a chunk's values pass through a per-processor map value, at most 32 KiB. */
    public static final int MAX_CHUNK_ELEMENTS = 8192;

    public static XdpDimensions of(final SwitchMemory memory) {
        return new XdpDimensions(memory.maxJobs(), memory.maxWorkers(), memory.poolSize(), memory.chunkElements(), memory.roundRing(),
            TableModel.ENTRIES);
    }

    public XdpDimensions {
        if (chunkElements > MAX_CHUNK_ELEMENTS) {
            throw new IllegalArgumentException("the XDP switch takes chunks of at most " + MAX_CHUNK_ELEMENTS + " elements, not "
                + chunkElements + " (--chunk-elements)");
        }
    }

    /** W: 64-bit words of a contributor bitmap. */
    public int words() {
        return (workers + 63) / 64;
    }

    /** The compiler's -D flags. */
    String[] defines() {
        return new String[] {"-DSERENE_J=" + jobs, "-DSERENE_N=" + workers, "-DSERENE_P=" + pool, "-DSERENE_K=" + chunkElements,
            "-DSERENE_G=" + ring, "-DSERENE_E=" + entries};
    }
}
