// The request versions Kafka 4.4's clients added, through the stock 4.4 client: every connection's
// ApiVersions (v5 names the cluster and node once the client knows them, KIP-1242), a
// consume-transform-produce transaction whose sendOffsetsToTransaction is TxnOffsetCommit v6
// (topics by id, KIP-1319), and Admin.deleteConsumerGroups (DeleteGroups v3).
// Prints one "CHECK name value" line per result.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class NewerVersionsCheck {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2], group = args[3];
        int n = Integer.parseInt(args[4]);
        Checks.check("copied", copy(bootstrap, input, output, group, n));
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            long committed = 0;
            for (OffsetAndMetadata o : admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().values())
                committed += o.offset();
            Checks.check("committed", committed);
            Checks.check("nodes", admin.describeCluster().nodes().get().size());
            admin.deleteConsumerGroups(List.of(group)).all().get();
            Checks.check("deleted", "ok");
            try {
                admin.deleteConsumerGroups(List.of(group)).all().get();
                Checks.check("deleted_again", "ok");
            } catch (ExecutionException e) {
                Checks.check("deleted_again", e.getCause().getClass().getSimpleName());
            }
        }
    }

    // Read `input` in a group and copy each poll's records to `output` in one transaction that
    // commits the group's offsets with it.
    static int copy(String bootstrap, String input, String output, String group, int n) {
        Properties c = Checks.consumer(bootstrap);
        c.put("group.id", group);
        c.put("isolation.level", "read_committed");
        c.put("auto.offset.reset", "earliest");
        Properties p = Checks.producer(bootstrap);
        p.put("transactional.id", "newer-" + group);
        int copied = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            consumer.subscribe(List.of(input));
            long deadline = System.currentTimeMillis() + 60_000;
            while (copied < n && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.key(), r.value()));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                producer.commitTransaction();
            }
        }
        return copied;
    }
}
