// The stock Java clients (kafka-clients 4.4) over SASL/OAUTHBEARER: each logs in with a token its
// OAuthBearerLoginCallbackHandler gets from the OIDC provider by client credentials (the settings
// come from CHECK_CLIENT_CONFIG; the client id and secret from the arguments). A transactional
// producer commits one transaction and aborts another, a read_committed consumer in its group reads
// exactly the committed records; then a client whose token's subject has no ACLs is refused.
// Prints "CHECK name value": a count, or the simple name of the exception a step ended with.
// With a last argument "reauth <seconds>": instead, one idempotent producer sends for that long
// (its tokens shorter-lived than that: it must log in again and re-authenticate, KIP-368), then a
// read_committed consumer counts what arrived.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class OAuthCheck {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String topic = args[1], client = args[2], secret = args[3], stranger = args[4], strangerSecret = args[5];
        if (args.length > 7 && args[6].equals("reauth")) {
            int sent = sendFor(client, secret, topic, Integer.parseInt(args[7]));
            Checks.check("sent", sent);
            Checks.check("read", count(client, secret, topic, sent));
            return;
        }
        transact(client, secret, topic, true);
        transact(client, secret, topic, false);
        Checks.check("read_committed", readCommitted(client, secret, topic));
        try {
            transact(stranger, strangerSecret, topic, true);
            Checks.check("stranger", "none");
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            Checks.check("stranger", (e instanceof org.apache.kafka.common.KafkaException ? e : cause)
                .getClass().getSimpleName());
        }
    }

    static Properties as(Properties p, String client, String secret) {
        p.put("sasl.oauthbearer.client.credentials.client.id", client);
        p.put("sasl.oauthbearer.client.credentials.client.secret", secret);
        return p;
    }

    static void transact(String client, String secret, String topic, boolean commit) {
        Properties props = as(Checks.producer(bootstrap), client, secret);
        props.put("transactional.id", "tx-" + topic);
        props.put("max.block.ms", "20000");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(topic, "k" + i, (commit ? "c" : "a") + i));
            if (commit) p.commitTransaction();
            else {
                p.flush();
                p.abortTransaction();
            }
        }
    }

    static Properties refreshingEarly(Properties p) {
        // Kafka's defaults refresh a token no sooner than 60 s and 300 s before it expires: the
        // provider's 8 s tokens need the refresh at 80% of their life, as the window factor says.
        p.put("sasl.login.refresh.min.period.seconds", "0");
        p.put("sasl.login.refresh.buffer.seconds", "0");
        return p;
    }

    static int sendFor(String client, String secret, String topic, int seconds) throws Exception {
        Properties props = refreshingEarly(as(Checks.producer(bootstrap), client, secret));
        props.put("enable.idempotence", "true");
        int n = 0;
        long end = System.currentTimeMillis() + seconds * 1000L;
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            while (System.currentTimeMillis() < end) {
                p.send(new ProducerRecord<>(topic, "k", "c" + n)).get();
                n++;
                Thread.sleep(250);
            }
        }
        return n;
    }

    static int count(String client, String secret, String topic, int expected) {
        Properties props = refreshingEarly(as(Checks.consumer(bootstrap), client, secret));
        props.put("group.id", "g-" + topic);
        props.put("isolation.level", "read_committed");
        props.put("auto.offset.reset", "earliest");
        int n = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (n < expected && System.currentTimeMillis() < deadline) n += c.poll(Duration.ofMillis(500)).count();
        }
        return n;
    }

    static int readCommitted(String client, String secret, String topic) {
        Properties props = as(Checks.consumer(bootstrap), client, secret);
        props.put("group.id", "g-" + topic);
        props.put("isolation.level", "read_committed");
        props.put("auto.offset.reset", "earliest");
        int n = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (n < 3 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    if (!r.value().startsWith("c")) throw new IllegalStateException("read uncommitted " + r.value());
                    n++;
                }
            }
            c.commitSync();
            // anything after the committed three would be an aborted record let through
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofSeconds(2))) n++;
        }
        return n;
    }
}
