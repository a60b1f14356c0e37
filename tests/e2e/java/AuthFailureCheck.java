// Each way to fail authentication, with the stock Java Admin client: for every
// "label|bootstrap|file|timeoutMs" argument (file: a .properties file of security settings),
// describeCluster through bootstrap within timeoutMs, and print
// "CHECK label ExceptionName" with the Kafka exception it failed with ("none" if it did not fail),
// then "CHECK label.message ..." with that exception's message.
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

public class AuthFailureCheck {
    public static void main(String[] args) throws Exception {
        for (String arg : args) {
            String[] labelFile = arg.split("\\|", 4);
            Properties p = new Properties();
            try (java.io.FileReader reader = new java.io.FileReader(labelFile[2])) {
                p.load(reader);
            }
            p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, labelFile[1]);
            p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, labelFile[3]);
            p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, labelFile[3]);
            p.put(AdminClientConfig.RECONNECT_BACKOFF_MS_CONFIG, "1000");
            try (Admin admin = Admin.create(p)) {
                admin.describeCluster().nodes().get();
                Checks.check(labelFile[0], "none");
            } catch (ExecutionException e) {
                Checks.check(labelFile[0], e.getCause().getClass().getSimpleName());
                Checks.check(labelFile[0] + ".message", String.valueOf(e.getCause().getMessage()).replace('\n', ' '));
            }
        }
    }
}
