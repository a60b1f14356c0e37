import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Share groups for the harness (issue 35), with Kafka's own 4.x clients (bench/load/share.py runs it).
 *
 * configure BOOTSTRAP GROUP KEY=VALUE...: sets group configs (IncrementalAlterConfigs on the GROUP).
 *
 * hold BOOTSTRAP TOPIC GROUP LOCK_MS: sets the group's share.record.lock.duration.ms to LOCK_MS and its
 * share.auto.offset.reset to earliest; then a share consumer (explicit acknowledgement) gets a record,
 * prints "HELD <epoch us> <delivery count>" and waits forever without acknowledging it: the harness
 * stops this JVM (SIGSTOP), so its client fetches nothing more and the record's lock runs out.
 *
 * receive BOOTSTRAP TOPIC GROUP: a share consumer polls until a redelivered record comes, prints
 * "RECEIVED <epoch us> <delivery count>" and exits.
 */
public class ShareRedelivery {
    static final byte[] WARM_UP = new byte[16];

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "configure" -> configure(args[1], args[2], List.of(args).subList(3, args.length));
            case "hold" -> {
                configure(args[1], args[3], List.of("share.record.lock.duration.ms=" + args[4],
                                                    "share.auto.offset.reset=earliest"));
                consume(args[1], args[2], args[3], "HELD", "explicit");
                Thread.sleep(Long.MAX_VALUE);
            }
            case "receive" -> consume(args[1], args[2], args[3], "RECEIVED", "implicit");
            default -> throw new IllegalArgumentException("configure, hold or receive, not " + args[0]);
        }
    }

    static void configure(String bootstrap, String group, List<String> settings) throws Exception {
        List<AlterConfigOp> ops = new ArrayList<>();
        for (String kv : settings) {
            String[] parts = kv.split("=", 2);
            ops.add(new AlterConfigOp(new ConfigEntry(parts[0], parts[1]), AlterConfigOp.OpType.SET));
        }
        try (Admin admin = Admin.create(Map.<String, Object>of("bootstrap.servers", bootstrap))) {
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops))
                .all().get(60, TimeUnit.SECONDS);
        }
    }

    /**
     * Warm up (produce a record and consume it, so that the timed receipt runs on loaded, compiled
     * code: a fresh JVM's first poll() returns ~100 ms after its fetch answer), then, to hold, produce
     * the record to hold and poll until it comes; to receive, poll until a redelivered record comes.
     * Print its arrival (epoch microseconds) and delivery count.
     */
    static void consume(String bootstrap, String topic, String group, String word, String mode) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", word.toLowerCase() + "-" + group);
        p.put("share.acknowledgement.mode", mode);
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp, new ByteArraySerializer(), new ByteArraySerializer())) {
            KafkaShareConsumer<byte[], byte[]> consumer =
                new KafkaShareConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            consumer.subscribe(List.of(topic));
            producer.send(new ProducerRecord<>(topic, 0, null, WARM_UP)).get();
            ConsumerRecord<byte[], byte[]> r = next(consumer, false);
            if (word.equals("HELD")) {
                consumer.acknowledge(r, AcknowledgeType.ACCEPT);
                consumer.commitSync();
                producer.send(new ProducerRecord<>(topic, 0, null, new byte[1024])).get();
            }
            if (word.equals("HELD") || r.deliveryCount().orElse((short) 1) == 1) {
                r = next(consumer, word.equals("RECEIVED"));  // unless the lock ran out during the warm-up
            }
            Instant now = Instant.now();
            System.out.printf("%s %d %d%n", word, now.getEpochSecond() * 1_000_000 + now.getNano() / 1_000,
                              r.deliveryCount().orElse((short) 0));
            System.out.flush();
            if (word.equals("RECEIVED")) consumer.close();
        }
    }

    /** The next record (a redelivered one if asked: warm-up records, delivered once, are passed over). */
    static ConsumerRecord<byte[], byte[]> next(KafkaShareConsumer<byte[], byte[]> consumer, boolean redelivered) {
        while (true) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                if (!redelivered || r.deliveryCount().orElse((short) 1) > 1) return r;
            }
        }
    }
}
