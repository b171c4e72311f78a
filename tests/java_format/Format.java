// Java's String.format(pattern, x) for each double on stdin (one per line, as Python's float.hex() writes it: the
// exact bits) and each pattern given as an argument; one output line per value, the patterns' results separated by
// tabs. Run as a single source file: java Format.java PATTERN... < values (tests/java_oracle.py).
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Locale;

public class Format {
    public static void main(String[] patterns) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isEmpty()) continue;
            double x = Double.parseDouble(line.trim());
            for (int i = 0; i < patterns.length; i++) {
                out.append(i > 0 ? "\t" : "").append(String.format(Locale.ROOT, patterns[i], x));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
