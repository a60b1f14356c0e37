// Kafka's own regular expressions (com.google.re2j, as TransactionStateManager and the group
// coordinator compile them) on cases read from stdin, one a line: hex of the UTF-8 pattern, then
// hex of each subject, tab-separated. Prints per line "ERR" or "OK" and matches() per subject.
import com.google.re2j.Pattern;
import com.google.re2j.PatternSyntaxException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

public final class Re2jCheck {
    private static String text(String hex) {
        return new String(HexFormat.of().parseHex(hex), StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            StringBuilder out = new StringBuilder();
            try {
                Pattern pattern = Pattern.compile(text(fields[0]));
                out.append("OK");
                for (int i = 1; i < fields.length; i++) out.append(' ').append(pattern.matcher(text(fields[i])).matches());
            } catch (PatternSyntaxException e) {
                out.append("ERR");
            }
            System.out.println(out);
        }
    }
}
