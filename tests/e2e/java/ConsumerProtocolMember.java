// One member of a consumer-protocol (KIP-848) group, driven by a Python test through its stdin
// and stdout: it prints "ASSIGNED p,p,..." whenever its assignment changes and "RECORD p offset
// value" for each record, commits after each poll, and leaves the group (close) on "stop".
// -Dgroup.protocol=classic makes it a classic-protocol member instead (a rolling migration); a
// commit the group refuses is printed as COMMIT_FAILED, not fatal, so the test sees it.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;

public final class ConsumerProtocolMember {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        Properties p = Checks.consumer(bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", System.getProperty("group.protocol", "consumer"));
        p.put("auto.offset.reset", "earliest");
        if (args.length > 3) p.put("group.remote.assignor", args[3]);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in))) {
                while (in.readLine() != null) { }
            } catch (Exception e) { }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            String last = null;
            while (!stop.get()) {
                var records = consumer.poll(Duration.ofMillis(100));
                for (ConsumerRecord<String, String> r : records) {
                    System.out.println("RECORD " + r.partition() + " " + r.offset() + " " + r.value());
                }
                if (!records.isEmpty()) {
                    try {
                        consumer.commitSync();
                    } catch (KafkaException e) {
                        System.out.println("COMMIT_FAILED " + e);
                    }
                }
                TreeSet<Integer> parts = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) parts.add(tp.partition());
                String now = parts.toString().replaceAll("[\\[\\] ]", "");
                if (!now.equals(last)) {
                    System.out.println("ASSIGNED " + now);
                    last = now;
                }
                System.out.flush();
            }
        }
        System.out.println("CLOSED");
        System.out.flush();
    }
}
