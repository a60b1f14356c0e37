// Drives eosbroker with the stock Java kafka-clients (the version Spark's connector ships):
// admin calls, an idempotent zstd producer, a transactional producer that commits and aborts,
// and read_committed / read_uncommitted consumers. Prints one "CHECK name value" line per result.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class ClientCheck {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        if (args[0].equals("--cases")) {
            for (String c : Arrays.copyOfRange(args, 1, args.length)) runCase(c.split("\\|", -1));
            return;
        }
        check(args[0], args[1], Integer.parseInt(args[2]), args.length > 3 && args[3].equals("txn"));
    }

    // One check of several in this JVM (one JVM and kafka-clients start instead of one per check):
    // label|bootstrap|topic|n|txn or nothing|client config file. Its CHECK lines follow "CASE label";
    // a check that throws prints "CHECK failed <exception>" and the next one runs.
    static void runCase(String[] f) {
        System.out.println("CASE " + f[0]);
        Checks.clientConfig = f[5];
        try {
            check(f[1], f[2], Integer.parseInt(f[3]), f[4].equals("txn"));
        } catch (Exception e) {
            e.printStackTrace();
            Checks.check("failed", e);
        }
    }

    static void check(String broker, String topic, int n, boolean transactions) throws Exception {
        bootstrap = broker;
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
            Checks.check("topic_listed", admin.listTopics().names().get().contains(topic));
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            Checks.check("partitions", d.partitions().size());
        }
        produce(topic, n);
        List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
        int expected = n;
        if (transactions) {
            transact(topic, n, true);
            transact(topic, n, false);
            expected += n;
        }
        Checks.check("read_committed", consume(tps, "read_committed", expected));
        Checks.check("read_uncommitted", consume(tps, "read_uncommitted", transactions ? expected + n : expected));
    }

    static Properties producerProps() {
        Properties p = Checks.producer(bootstrap);
        p.put("compression.type", "zstd");
        return p;
    }

    static void produce(String topic, int n) {
        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
            for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % 2, "k" + i, "plain-" + i));
            p.flush();
        }
    }

    static void transact(String topic, int n, boolean commit) {
        Properties props = producerProps();
        props.put("transactional.id", "java-check-" + topic);
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.initTransactions();
            p.beginTransaction();
            String tag = commit ? "committed-" : "aborted-";
            for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % 2, "k" + i, tag + i));
            if (commit) p.commitTransaction();
            else {
                p.flush();
                p.abortTransaction();
            }
        }
    }

    static int consume(List<TopicPartition> tps, String isolation, int expected) {
        Properties cp = Checks.consumer(bootstrap);
        cp.put("isolation.level", isolation);
        cp.put("auto.offset.reset", "none");
        int got = 0;
        int aborted = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30000;
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    got++;
                    if (r.value().startsWith("aborted-")) aborted++;
                }
                boolean atEnd = true;
                for (TopicPartition tp : tps) atEnd &= c.position(tp) >= end.get(tp);
                if (atEnd && got >= expected) break;
            }
        }
        Checks.check(isolation + "_aborted_seen", aborted);
        return got;
    }
}
