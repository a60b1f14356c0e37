// The stock Java clients under ACLs, over SASL/PLAIN (the security settings come from
// CHECK_CLIENT_CONFIG; each client logs in as the user a step names). With the ACLs it needs, a
// transactional producer commits and aborts and a read_committed consumer in its group reads exactly
// the committed records and commits its offsets; without each ACL the client throws the exception Kafka
// maps from the error; another principal cannot take over (fence) the transactional id of a producer
// whose transaction then commits. Prints "CHECK name value": a count, "ok", or the simple name of the
// authorization exception a step ended with ("none" if it did not fail).
import java.time.Duration;
import java.util.*;
import java.util.concurrent.Callable;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class AclCheck {
    static String bootstrap;
    static String suffix;  // each run its own topics and ids: "-39", "-4x"
    static final Map<String, String> PASSWORDS = Map.of(
        "alice", "alice-secret", "mallory", "mallory-secret", "eve", "eve-secret");
    static final Duration CLOSE = Duration.ofSeconds(5);

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        suffix = args[1];
        String ledger = "ledger" + suffix, txn = "tx-alice" + suffix;
        committedAndAborted(ledger, txn);
        Checks.check("allowed_read_committed", readCommitted("alice", "alice-group" + suffix, ledger, 3));
        Checks.check("no_write_on_topic", failure(() -> sendInTransaction("alice", txn, "secret" + suffix)));
        Checks.check("no_read_on_topic", failure(() -> readCommitted("alice", "alice-group" + suffix, "drop" + suffix, 1)));
        Checks.check("no_read_on_group", failure(() -> readCommitted("alice", "other-group", ledger, 1)));
        Checks.check("no_group_for_txn_offsets", failure(() -> sendOffsets("alice", txn, ledger, "other-group")));
        Checks.check("txn_offsets_with_group", sendOffsets("alice", txn, ledger, "alice-group" + suffix));
        Checks.check("no_write_on_txn_id", failure(() -> sendInTransaction("alice", "tx-other" + suffix, ledger)));
        Checks.check("no_idempotent_write", failure(() -> idempotentSend("eve", ledger)));
        fenceAnothersTransactionalId(ledger, txn);
        Checks.check("committed_in_the_end", readCommitted("alice", "alice-group-2" + suffix, ledger, 4));
    }

    static Properties as(Properties p, String user) {
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
            + user + "\" password=\"" + PASSWORDS.get(user) + "\";");
        return p;
    }

    static KafkaProducer<String, String> producer(String user, String transactionalId) {
        Properties p = as(Checks.producer(bootstrap), user);
        p.put("transactional.id", transactionalId);
        p.put("max.block.ms", "20000");
        return new KafkaProducer<>(p);
    }

    // three records committed, one aborted
    static void committedAndAborted(String topic, String transactionalId) throws Exception {
        try (KafkaProducer<String, String> p = producer("alice", transactionalId)) {
            p.initTransactions();
            p.beginTransaction();
            for (int i = 0; i < 3; i++) p.send(new ProducerRecord<>(topic, "committed-" + i));
            p.commitTransaction();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, "aborted")).get();
            p.abortTransaction();
        }
    }

    static String sendInTransaction(String user, String transactionalId, String topic) throws Exception {
        KafkaProducer<String, String> p = producer(user, transactionalId);
        try {
            p.initTransactions();
            p.beginTransaction();
            p.send(new ProducerRecord<>(topic, "refused")).get();
            p.commitTransaction();
            return "ok";
        } finally {
            p.close(CLOSE);
        }
    }

    static String sendOffsets(String user, String transactionalId, String topic, String group) throws Exception {
        KafkaProducer<String, String> p = producer(user, transactionalId);
        try {
            p.initTransactions();
            p.beginTransaction();
            p.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(0)),
                new ConsumerGroupMetadata(group));
            p.abortTransaction();
            return "ok";
        } finally {
            p.close(CLOSE);
        }
    }

    static String idempotentSend(String user, String topic) throws Exception {
        Properties props = as(Checks.producer(bootstrap), user);
        props.put("enable.idempotence", "true");
        props.put("max.block.ms", "20000");
        props.put("delivery.timeout.ms", "20000");
        props.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.send(new ProducerRecord<>(topic, "idempotent")).get();
            return "ok";
        }
    }

    // read_committed from the start in `group`: the values read, after committing the offsets
    static int readCommitted(String user, String group, String topic, int expected) {
        Properties props = as(Checks.consumer(bootstrap), user);
        props.put("group.id", group);
        props.put("isolation.level", "read_committed");
        props.put("auto.offset.reset", "earliest");
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(props)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (got.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
            }
            c.commitSync();
        }
        if (got.stream().anyMatch(v -> v.startsWith("aborted"))) throw new IllegalStateException("read " + got);
        return got.size();
    }

    static void fenceAnothersTransactionalId(String topic, String transactionalId) throws Exception {
        try (KafkaProducer<String, String> alice = producer("alice", transactionalId)) {
            alice.initTransactions();
            alice.beginTransaction();
            alice.send(new ProducerRecord<>(topic, "committed-3")).get();
            Checks.check("fence_anothers_txn_id", failure(() -> {
                try (KafkaProducer<String, String> mallory = producer("mallory", transactionalId)) {
                    mallory.initTransactions();
                    return "ok";
                }
            }));
            alice.commitTransaction();
            Checks.check("owner_commits_after", "ok");
        }
    }

    // the authorization exception a step failed with, wherever the client wrapped it
    static String failure(Callable<?> step) {
        try {
            step.call();
            return "none";
        } catch (Exception e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t.getClass().getSimpleName().endsWith("AuthorizationException")) return t.getClass().getSimpleName();
            }
            e.printStackTrace();
            return "unexpected:" + e.getClass().getSimpleName();
        }
    }
}
