// Reads one partition of a (compacted) topic from its start to a given end offset at an isolation
// level and prints every record as "REC offset key value" (value "<null>" for a tombstone), so the
// Python test can compare what the stock Java consumer sees across the offset gaps.
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

public final class CompactedRead {
    public static void main(String[] args) {
        String bootstrap = args[0];
        TopicPartition tp = new TopicPartition(args[1], 0);
        long end = Long.parseLong(args[2]);
        Properties p = Checks.consumer(bootstrap);
        p.put("isolation.level", args[3]);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 120_000;
            while (consumer.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    System.out.println("REC " + r.offset() + " " + r.key() + " " + (r.value() == null ? "<null>" : r.value()));
                }
            }
            Checks.check("position", consumer.position(tp));
        }
    }
}
