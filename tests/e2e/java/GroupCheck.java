// Drives eosbroker's group coordinator with the stock Java kafka-clients (Spark's version): two
// consumers of one group split a 6-partition topic, commit, one leaves and the other takes over
// every partition, the committed offsets read back through a third consumer and through the admin
// API (batched FindCoordinator, OffsetFetch v8+). Prints one "CHECK name value" line per result.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class GroupCheck {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        String group = topic + "-group";
        Set<String> seen = new HashSet<>();
        KafkaConsumer<String, String> c1 = consumer(group);
        KafkaConsumer<String, String> c2 = consumer(group);
        c1.subscribe(List.of(topic));
        c2.subscribe(List.of(topic));
        long deadline = System.currentTimeMillis() + 90_000;
        // Settle the split first and produce afterwards, so every record is consumed (and
        // committed) by the member that owns its partition in the final generation.
        while ((c1.assignment().size() != 3 || c2.assignment().size() != 3)
                && System.currentTimeMillis() < deadline) {
            for (KafkaConsumer<String, String> c : List.of(c1, c2)) c.poll(Duration.ofMillis(100));
        }
        Checks.check("split", c1.assignment().size() + "/" + c2.assignment().size());
        produce(topic, n);
        while (seen.size() < n && System.currentTimeMillis() < deadline) {
            for (KafkaConsumer<String, String> c : List.of(c1, c2)) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) seen.add(r.value());
            }
        }
        Checks.check("consumed", seen.size());
        c1.commitSync();
        c2.commitSync();
        c1.close();
        while (c2.assignment().size() != 6 && System.currentTimeMillis() < deadline) {
            c2.poll(Duration.ofMillis(100));
        }
        Checks.check("after_leave", c2.assignment().size());
        c2.close();
        Set<TopicPartition> all = new HashSet<>();
        for (int p = 0; p < 6; p++) all.add(new TopicPartition(topic, p));
        try (KafkaConsumer<String, String> c3 = consumer(group)) {
            long total = 0;
            for (OffsetAndMetadata o : c3.committed(all, Duration.ofSeconds(30)).values()) total += o.offset();
            Checks.check("committed_total", total);
        }
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            long total = 0;
            for (OffsetAndMetadata o : admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().values()) {
                total += o.offset();
            }
            Checks.check("admin_committed_total", total);
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            Checks.check("state", d.state());
            Checks.check("listed", admin.listConsumerGroups().all().get().stream().anyMatch(l -> l.groupId().equals(group)));
            // The internal topic exists but is hidden from listings unless asked for.
            Checks.check("internal_hidden", !admin.listTopics().names().get().contains("__consumer_offsets"));
            Checks.check("internal_listed", admin.listTopics(new ListTopicsOptions().listInternal(true))
                    .names().get().contains("__consumer_offsets"));
            admin.deleteConsumerGroups(List.of(group)).all().get();
            Checks.check("deleted", !admin.listConsumerGroups().all().get().stream().anyMatch(l -> l.groupId().equals(group)));
        }
    }

    static KafkaConsumer<String, String> consumer(String group) {
        Properties p = Checks.consumer(bootstrap);
        p.put("group.id", group);
        p.put("auto.offset.reset", "earliest");
        p.put("isolation.level", "read_committed");
        return new KafkaConsumer<>(p);
    }

    static void produce(String topic, int n) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Checks.producer(bootstrap))) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, i % 6, null, "m" + i));
            producer.flush();
        }
    }
}
