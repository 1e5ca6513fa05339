/*
 * cogr-search OpenSearch plugin.
 */
package org.cogr.opensearch.student;

/**
 * The export format's {@code exp}: the same operations, in the same order, as Python's
 * {@code export.exp_v1}, so both give the same bits (Java's double arithmetic is strict
 * IEEE 754 since Java 17). {@link Math#exp} and Python's {@code math.exp} may differ in the
 * last bit, and a forest's label order can hinge on it.
 */
final class CogrMath {

    private static final double LN2_HI = 6.93147180369123816490e-01;
    private static final double LN2_LO = 1.90821492927058770002e-10;
    private static final double INV_LN2 = 1.44269504088896338700e00;

    private CogrMath() {}

    static double exp(double x) {
        if (x < -700.0) {
            return 0.0;
        }
        if (x > 700.0) {
            return Double.POSITIVE_INFINITY;
        }
        double k = Math.floor(x * INV_LN2 + 0.5);
        double r = (x - k * LN2_HI) - k * LN2_LO;
        double p = 1.0;
        for (int n = 13; n > 0; n--) {
            p = 1.0 + r * p / n;
        }
        return Math.scalb(p, (int) k);
    }

    /** omikuji's score of a hinge-loss classifier: -(max(0, 1 - s))^2. */
    static double hinge(double s) {
        double m = 1.0 - s;
        if (m < 0.0) {
            return 0.0;
        }
        return -(m * m);
    }
}
