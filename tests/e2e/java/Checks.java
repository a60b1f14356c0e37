// What the check programs share: the "CHECK name value" lines the Python tests read, and the
// settings every client of theirs starts from (String keys and values, no auto-commit).
import java.util.Properties;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

final class Checks {
    private Checks() {}

    static void check(String name, Object value) {
        System.out.println("CHECK " + name + " " + value);
    }

    // Security settings (security.protocol, ssl.*, sasl.*) for every client, from a file; a program
    // that runs several checks sets it for each.
    static String clientConfig = System.getenv("CHECK_CLIENT_CONFIG");

    static Properties admin(String bootstrap) {
        Properties p = new Properties();
        if (clientConfig != null && !clientConfig.isEmpty()) {
            try (java.io.FileReader reader = new java.io.FileReader(clientConfig)) {
                p.load(reader);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static Properties producer(String bootstrap) {
        Properties p = admin(bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    static Properties consumer(String bootstrap) {
        Properties p = admin(bootstrap);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        return p;
    }
}
