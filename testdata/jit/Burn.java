// SPDX-License-Identifier: Apache-2.0
//
// java Burn SECONDS TRUTH: burnA and burnB have identical bodies; the loop
// calls burnA three times for each call of burnB, for SECONDS, and writes
// the CPU time spent in each (the thread's, around each call) to TRUTH as
// "ns_a N" and "ns_b N" lines. Run with -XX:+PreserveFramePointer and a perf
// map (-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit).
import java.io.FileWriter;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

public class Burn {
    static double burnA(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001;
        return s;
    }

    static double burnB(int n) {
        double s = 0;
        for (int i = 0; i < n; i++) s += Math.sqrt(i) * 1.0001;
        return s;
    }

    public static void main(String[] args) throws IOException {
        long end = System.nanoTime() + (long) (Double.parseDouble(args[0]) * 1e9);
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long nsA = 0, nsB = 0;
        double sink = 0;
        while (System.nanoTime() < end) {
            for (int k = 0; k < 3; k++) {
                long t0 = mx.getCurrentThreadCpuTime();
                sink += burnA(200000);
                nsA += mx.getCurrentThreadCpuTime() - t0;
            }
            long t0 = mx.getCurrentThreadCpuTime();
            sink += burnB(200000);
            nsB += mx.getCurrentThreadCpuTime() - t0;
        }
        if (args.length > 1) {
            try (FileWriter w = new FileWriter(args[1])) {
                w.write("ns_a " + nsA + "\nns_b " + nsB + "\nsink " + (sink > 0 ? 1 : 0) + "\n");
            }
        }
    }
}
