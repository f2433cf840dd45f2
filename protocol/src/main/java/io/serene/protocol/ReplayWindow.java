package io.serene.protocol;

/**
 * Replay windows over a peer's packet numbers (RFC 6479's ring of bit words, as IPsec's): a number
 * is taken once, and only if it is newer than the peer's highest less {@link #SPAN}. The windows
 * live in the caller's arrays, one slot a peer: {@code highest[peer]} and {@link #WORDS} words of
 * {@code seen} from {@code peer * WORDS}, all 0 for a peer not heard from yet. No allocation.
 */
public final class ReplayWindow {
    /** Bit words a window keeps. */
    public static final int WORDS = 4;
    /** How far behind a peer's highest number a packet may be and still be taken (reordering). */
    public static final int SPAN = (WORDS - 1) * Long.SIZE;

    private ReplayWindow() {
    }

    /** Whether number {@code n} of peer {@code peer} is new (and then marks it seen): false for a replay or one too old. */
    public static boolean take(final long[] highest, final long[] seen, final int peer, final long n) {
        final int base = peer * WORDS;
        final long h = highest[peer];
        if (n > h) {
            // the words the window moves into start empty
            final long clear = Math.min((n >>> 6) - (h >>> 6), WORDS);
            for (long k = 1; k <= clear; k++) {
                seen[base + (int) (((h >>> 6) + k) & (WORDS - 1))] = 0;
            }
            highest[peer] = n;
        } else if (h - n >= SPAN) {
            return false;
        }
        final int word = base + (int) ((n >>> 6) & (WORDS - 1));
        final long bit = 1L << (n & 63);
        if ((seen[word] & bit) != 0) {
            return false;
        }
        seen[word] |= bit;
        return true;
    }

    /** Starts peer {@code peer}'s window at {@code n}: every number up to it counts as seen, every later one is new. */
    public static void startAt(final long[] highest, final long[] seen, final int peer, final long n) {
        highest[peer] = n;
        for (int k = 0; k < WORDS; k++) {
            seen[peer * WORDS + k] = -1L;
        }
        // the word n is in: only n and the numbers below it
        seen[peer * WORDS + (int) ((n >>> 6) & (WORDS - 1))] = (n & 63) == 63 ? -1L : (1L << ((n & 63) + 1)) - 1;
    }

    /** Forgets peer {@code peer}'s window (its next number is taken whatever it is). */
    public static void reset(final long[] highest, final long[] seen, final int peer) {
        highest[peer] = 0;
        for (int k = 0; k < WORDS; k++) {
            seen[peer * WORDS + k] = 0;
        }
    }
}
