// Workload 5 with the Java kafka-clients 4.x producer: one-record transactions, begin to the return
// of commitTransaction, after setting the finalized transaction.version (1: Transactions V1,
// 2: V2) with Admin.updateFeatures, so the producer (created afterwards) uses that protocol.
// Prints "LATENCY_MS <ms>" per transaction and "WALL_S <s>" for the timed loop.
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnLatency {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        short level = Short.parseShort(args[3]);
        Properties common = new Properties();
        common.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(common)) {
            short current = admin.describeFeatures().featureMetadata().get().finalizedFeatures()
                .getOrDefault("transaction.version", new FinalizedVersionRange((short) 0, (short) 0)).maxVersionLevel();
            if (current != level) {
                FeatureUpdate.UpgradeType type = level > current
                    ? FeatureUpdate.UpgradeType.UPGRADE : FeatureUpdate.UpgradeType.SAFE_DOWNGRADE;
                admin.updateFeatures(Map.of("transaction.version", new FeatureUpdate(level, type)),
                                     new UpdateFeaturesOptions()).all().get();
            }
        }
        Properties p = new Properties();
        p.putAll(common);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("transactional.id", topic + "-java-tv" + level);
        p.put("linger.ms", "0");
        byte[] value = new byte[1024];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            System.out.println("MARK start");
            long t0 = System.nanoTime();
            for (int i = 0; i < count; i++) {
                long s = System.nanoTime();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>(topic, value));
                producer.commitTransaction();
                System.out.println("LATENCY_MS " + (System.nanoTime() - s) / 1e6);
            }
            System.out.println("WALL_S " + (System.nanoTime() - t0) / 1e9);
        }
    }
}
