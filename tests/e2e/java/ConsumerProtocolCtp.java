// Consume-transform-produce with kafka-clients 4.x and the consumer group protocol (KIP-848):
// a read_committed consumer (group.protocol=consumer) and a transactional producer that sends the
// consumed offsets with the consumer's group metadata (member id and member epoch, KIP-447),
// aborting every third batch and rewinding to the committed offsets. Prints CHECK lines.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public final class ConsumerProtocolCtp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], input = args[1], output = args[2];
        int total = Integer.parseInt(args[3]);
        Properties c = Checks.consumer(bootstrap);
        c.put("group.id", "java-ctp-848");
        c.put("group.protocol", "consumer");
        c.put("isolation.level", "read_committed");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", "40");
        Properties p = Checks.producer(bootstrap);
        p.put("transactional.id", "java-ctp-848");
        int batches = 0, aborted = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            consumer.subscribe(List.of(input));
            producer.initTransactions();
            long deadline = System.currentTimeMillis() + 120_000;
            while (committedTotal(consumer, input) < total && System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                if (++batches % 3 == 0) {
                    producer.flush();
                    producer.abortTransaction();
                    aborted++;
                    for (TopicPartition tp : offsets.keySet()) {
                        OffsetAndMetadata committed = consumer.committed(Set.of(tp)).get(tp);
                        consumer.seek(tp, committed == null ? 0 : committed.offset());
                    }
                } else {
                    producer.commitTransaction();
                }
            }
            Checks.check("committed", committedTotal(consumer, input));
            Checks.check("member_epoch_positive", consumer.groupMetadata().generationId() > 0);
        }
        Checks.check("aborted_some", aborted >= 2);
    }

    static long committedTotal(KafkaConsumer<String, String> consumer, String topic) {
        Set<TopicPartition> tps = new HashSet<>();
        consumer.partitionsFor(topic).forEach(i -> tps.add(new TopicPartition(topic, i.partition())));
        long sum = 0;
        for (OffsetAndMetadata o : consumer.committed(tps).values()) if (o != null) sum += o.offset();
        return sum;
    }
}
