// Transactions with the Java kafka-clients 4.x producer, which uses Transactions V2 (KIP-890) when
// the broker finalizes transaction.version 2: commit and abort, an empty abort, zombie fencing,
// a transaction the broker times out, consume-transform-produce with a 4.x consumer, and a send
// the broker answers TRANSACTION_ABORTABLE (KIP-890 part 1).
// Prints one "CHECK name value" line per result.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.*;

public class TxnV2Check {
    static String bootstrap;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String mode = args[1];
        String topic = args[2];
        int n = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        switch (mode) {
            case "commit-abort" -> commitAbort(topic, n);
            case "fence" -> fence(topic, n);
            case "fence-admin" -> fenceByAdmin(topic, n);
            case "timeout" -> timeout(topic, n);
            case "ctp" -> consumeTransformProduce(topic, args[4], n);
            case "produce" -> Checks.check("produced", transact(topic, args[4], n, args[5].equals("commit")));
            case "upgrade" -> upgrade(topic, n);
            case "abortable" -> abortable(topic, n);
            case "count" -> {
                Checks.check("read_committed", consume(topic, "read_committed"));
                Checks.check("read_uncommitted", consume(topic, "read_uncommitted"));
            }
            default -> throw new IllegalArgumentException(mode);
        }
    }

    static KafkaProducer<String, String> txnProducer(String id, int timeoutMs) {
        Properties p = Checks.producer(bootstrap);
        p.put("transactional.id", id);
        p.put("transaction.timeout.ms", String.valueOf(timeoutMs));
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    // A batch the broker refuses with TRANSACTION_ABORTABLE fails its send with
    // TransactionAbortableException: the producer is not fenced, it aborts and its next
    // transaction commits.
    static void abortable(String topic, int n) throws Exception {
        try (KafkaProducer<String, String> p = txnProducer("abortable", 60000)) {
            p.beginTransaction();
            try {
                p.send(new ProducerRecord<>(topic, 0, "k", "lost")).get();
                Checks.check("first_send", "ok");
            } catch (java.util.concurrent.ExecutionException e) {
                Checks.check("first_send", e.getCause().getClass().getSimpleName());
            }
            p.abortTransaction();
            p.beginTransaction();
            for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, 0, "k", "v-" + i));
            p.commitTransaction();
            Checks.check("committed", n);
        }
        Checks.check("read_committed", consume(topic, "read_committed"));
        Checks.check("read_uncommitted", consume(topic, "read_uncommitted"));
    }

    static int transact(String topic, String id, int n, boolean commit) {
        try (KafkaProducer<String, String> p = txnProducer(id, 60000)) {
            p.beginTransaction();
            for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % 2, id, (commit ? "c-" : "a-") + i));
            if (commit) p.commitTransaction();
            else {
                p.flush();  // written, then aborted
                p.abortTransaction();
            }
        }
        return n;
    }

    // several transactions on one producer: each ends with an epoch bump under V2
    static void commitAbort(String topic, int n) {
        try (KafkaProducer<String, String> p = txnProducer("v2-" + topic, 60000)) {
            for (int t = 0; t < 3; t++) {
                p.beginTransaction();
                for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % 2, "k", "t" + t + "-" + i));
                if (t == 1) {
                    p.flush();  // written, then aborted
                    p.abortTransaction();
                } else p.commitTransaction();
            }
            p.beginTransaction();
            p.abortTransaction();  // empty: nothing sent
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, 0, "k", "last"));
            p.commitTransaction();
        }
        Checks.check("read_committed", consume(topic, "read_committed"));
        Checks.check("read_uncommitted", consume(topic, "read_uncommitted"));
    }

    static void fence(String topic, int n) {
        KafkaProducer<String, String> zombie = txnProducer("fence-" + topic, 60000);
        zombie.beginTransaction();
        for (int i = 0; i < n; i++) zombie.send(new ProducerRecord<>(topic, i % 2, "z", "zombie-" + i));
        zombie.flush();
        try (KafkaProducer<String, String> fresh = txnProducer("fence-" + topic, 60000)) {
            Checks.check("zombie_commit", outcome(zombie::commitTransaction));
            fresh.beginTransaction();
            fresh.send(new ProducerRecord<>(topic, 0, "f", "fresh"));
            fresh.commitTransaction();
        }
        zombie.close(Duration.ZERO);
        Checks.check("read_committed", consume(topic, "read_committed"));
    }

    // Admin.fenceProducers (KIP-664) on a live producer with an open transaction: the broker bumps
    // the epoch and aborts the transaction; the producer's next send and its commit fail as
    // against Kafka, and its records are aborted.
    static void fenceByAdmin(String topic, int n) throws Exception {
        String id = "admin-fenced-" + topic;
        KafkaProducer<String, String> p = openTransaction(id, 60000, topic, n);
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            admin.fenceProducers(List.of(id)).all().get();
            Checks.check("fence_producers", "ok");
        }
        Checks.check("next_send", sendOutcome(p, new ProducerRecord<>(topic, 0, "a", "after-fence")));
        Checks.check("commit", outcome(p::commitTransaction));
        p.close(Duration.ZERO);
        Checks.check("read_committed", consume(topic, "read_committed"));
        Checks.check("read_uncommitted", consume(topic, "read_uncommitted"));
    }

    // a producer with a transaction holding n records over partitions 0 and 1, left open
    static KafkaProducer<String, String> openTransaction(String id, int timeoutMs, String topic, int n) {
        KafkaProducer<String, String> p = txnProducer(id, timeoutMs);
        p.beginTransaction();
        for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % 2, "k", id + "-" + i));
        p.flush();
        return p;
    }

    static String sendOutcome(KafkaProducer<String, String> p, ProducerRecord<String, String> record) {
        try {
            p.send(record).get();
            return "ok";
        } catch (java.util.concurrent.ExecutionException e) {
            return e.getCause().getClass().getSimpleName();
        } catch (KafkaException e) {
            return e.getClass().getSimpleName();
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    // the broker aborts the transaction after transaction.timeout.ms; the producer is then fenced
    static void timeout(String topic, int n) throws Exception {
        String id = "timeout-" + topic;
        KafkaProducer<String, String> p = openTransaction(id, 1000, topic, n);
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            TransactionState state;
            do {  // until the broker has aborted it (no fixed sleep)
                Thread.sleep(100);
                state = admin.describeTransactions(List.of(id)).description(id).get().state();
            } while (state == TransactionState.ONGOING || state == TransactionState.PREPARE_ABORT);
            Checks.check("state_after_timeout", state);
        }
        Checks.check("late_commit", outcome(p::commitTransaction));
        p.close(Duration.ZERO);
        Checks.check("read_committed", consume(topic, "read_committed"));
    }

    // one transaction, then (once told on stdin, after the broker's level rose and it restarted)
    // three more on the same producer: it switches to V2 at a transaction boundary
    static void upgrade(String topic, int n) throws Exception {
        try (KafkaProducer<String, String> p = txnProducer("upgrade-" + topic, 60000)) {
            for (int t = 0; t < 4; t++) {
                if (t == 1) {
                    Checks.check("phase", "1");
                    System.out.flush();
                    new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
                }
                p.beginTransaction();
                for (int i = 0; i < n; i++) p.send(new ProducerRecord<>(topic, i % 2, "u", "t" + t + "-" + i));
                p.commitTransaction();
            }
        }
        Checks.check("read_committed", consume(topic, "read_committed"));
    }

    static void consumeTransformProduce(String input, String output, int n) {
        Properties c = Checks.consumer(bootstrap);
        c.put("group.id", "ctp-" + input);
        c.put("isolation.level", "read_committed");
        c.put("auto.offset.reset", "earliest");
        int copied = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> producer = txnProducer("ctp-" + input, 60000)) {
            consumer.subscribe(List.of(input));
            while (copied < n) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) continue;
                producer.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    producer.send(new ProducerRecord<>(output, r.partition(), r.key(), r.value().toUpperCase()));
                    offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    copied++;
                }
                producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                producer.commitTransaction();
            }
        }
        Checks.check("copied", copied);
        Checks.check("output_read_committed", consume(output, "read_committed"));
    }

    static String outcome(Runnable action) {
        try {
            action.run();
            return "ok";
        } catch (KafkaException e) {
            return e.getClass().getSimpleName();
        }
    }

    // every record up to the end of both partitions, at the given isolation level
    static int consume(String topic, String isolation) {
        Properties c = Checks.consumer(bootstrap);
        c.put("isolation.level", isolation);
        List<TopicPartition> tps = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            int seen = 0;
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp))) {
                seen += consumer.poll(Duration.ofMillis(200)).count();
            }
            return seen;
        }
    }
}
