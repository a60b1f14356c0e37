// Kafka 4.4's KafkaShareConsumer against the broker (share groups, KIP-932). One scenario per run:
//   ShareCheck <bootstrap> <scenario> <topic> <group> <records>
// Each prints "CHECK name value" lines for the Python test. The group's share.* configs are set with
// the admin client first (share.auto.offset.reset=earliest, plus the scenario's own).
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;

public final class ShareCheck {
    private static final long GIVE_UP_MS = 60_000;

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], scenario = args[1], topic = args[2], group = args[3];
        int records = Integer.parseInt(args[4]);
        Map<String, String> configs = new HashMap<>(Map.of("share.auto.offset.reset", "earliest"));
        switch (scenario) {
            case "lock_timeout" -> configs.put("share.record.lock.duration.ms", "1000");
            case "delivery_limit" -> configs.put("share.delivery.count.limit", "2");
            case "read_committed" -> configs.put("share.isolation.level", "read_committed");
            case "dead_letters" -> configs.putAll(Map.of("share.delivery.count.limit", "2",
                "share.record.lock.duration.ms", "1000", "errors.deadletterqueue.topic.name", "dlq." + topic,
                "errors.deadletterqueue.copy.record.enable", "true"));
            default -> { }
        }
        setGroupConfigs(bootstrap, group, configs);
        switch (scenario) {
            case "members" -> members(bootstrap, topic, group, records, 3);
            case "explicit" -> explicit(bootstrap, topic, group, records);
            case "lock_timeout" -> lockTimeout(bootstrap, topic, group, records);
            case "delivery_limit" -> deliveryLimit(bootstrap, topic, group, records);
            case "read_committed" -> readCommitted(bootstrap, topic, group, records);
            case "dead_letters" -> deadLetters(bootstrap, topic, group, records);
            case "consume" -> Checks.check("consumed", consumeAll(bootstrap, topic, group, records).size());
            default -> throw new IllegalArgumentException(scenario);
        }
    }

    static void setGroupConfigs(String bootstrap, String group, Map<String, String> configs) throws Exception {
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            List<AlterConfigOp> ops = new ArrayList<>();
            configs.forEach((k, v) -> ops.add(new AlterConfigOp(new ConfigEntry(k, v), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, group), ops)).all().get();
        }
    }

    static KafkaShareConsumer<String, String> consumer(String bootstrap, String group, boolean explicit) {
        var p = Checks.consumer(bootstrap);
        p.remove("enable.auto.commit");
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", explicit ? "explicit" : "implicit");
        return new KafkaShareConsumer<>(p);
    }

    // Several members, implicit acknowledgement: once all of them have partitions (the admin
    // client's describe says so) the records are produced; every one is delivered once in all,
    // and each member gets some.
    static void members(String bootstrap, String topic, String group, int records, int count) throws Exception {
        Map<String, Integer> seen = new ConcurrentHashMap<>();
        Set<Integer> withRecords = ConcurrentHashMap.newKeySet();
        AtomicBoolean done = new AtomicBoolean(false);
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            int member = i;
            Thread t = new Thread(() -> {
                try (var c = consumer(bootstrap, group, false)) {
                    c.subscribe(List.of(topic));
                    long end = System.currentTimeMillis() + GIVE_UP_MS;
                    while (!done.get() && System.currentTimeMillis() < end) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                            seen.merge(r.value(), 1, Integer::sum);
                            withRecords.add(member);
                        }
                        if (seen.size() >= records) {
                            done.set(true);
                        }
                    }
                    c.commitSync();
                }
            });
            threads.add(t);
            t.start();
        }
        Checks.check("described", awaitMembers(bootstrap, group, count));
        try (var producer = new KafkaProducer<String, String>(Checks.producer(bootstrap))) {
            int partitions = producer.partitionsFor(topic).size();
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, null, String.valueOf(i)));
            }
        }
        for (Thread t : threads) {
            t.join();
        }
        Checks.check("consumed", seen.size());
        Checks.check("duplicates", seen.values().stream().filter(n -> n > 1).count());
        Checks.check("members_with_records", withRecords.size());
    }

    // The group as the admin client describes it once every member has an assignment.
    static String awaitMembers(String bootstrap, String group, int count) throws Exception {
        try (Admin admin = Admin.create(Checks.admin(bootstrap))) {
            long end = System.currentTimeMillis() + GIVE_UP_MS;
            while (System.currentTimeMillis() < end) {
                org.apache.kafka.clients.admin.ShareGroupDescription d;
                try {
                    d = admin.describeShareGroups(List.of(group)).all().get().get(group);
                } catch (java.util.concurrent.ExecutionException e) {
                    d = null;  // not joined yet: GroupIdNotFoundException
                }
                if (d != null && d.members().size() == count
                        && d.members().stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty())) {
                    return d.groupState() + " " + d.members().size();
                }
                Thread.sleep(100);
            }
        }
        return "timeout";
    }

    static List<ConsumerRecord<String, String>> pollAll(KafkaShareConsumer<String, String> c, int wanted,
                                                        AcknowledgeType type) {
        List<ConsumerRecord<String, String>> out = new ArrayList<>();
        long end = System.currentTimeMillis() + GIVE_UP_MS;
        while (out.size() < wanted && System.currentTimeMillis() < end) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                out.add(r);
                c.acknowledge(r, type);
            }
        }
        c.commitSync();
        return out;
    }

    static Set<Short> deliveryCounts(Collection<ConsumerRecord<String, String>> records) {
        Set<Short> out = new HashSet<>();
        records.forEach(r -> out.add(r.deliveryCount().orElse((short) -1)));
        return out;
    }

    // RELEASE comes back with delivery count 2; REJECT and ACCEPT do not come back.
    static void explicit(String bootstrap, String topic, String group, int records) {
        try (var c = consumer(bootstrap, group, true)) {
            c.subscribe(List.of(topic));
            var first = pollAll(c, records, AcknowledgeType.RELEASE);
            Checks.check("first", first.size() + " " + deliveryCounts(first));
            List<ConsumerRecord<String, String>> second = new ArrayList<>();
            long end = System.currentTimeMillis() + GIVE_UP_MS;
            while (second.size() < records && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    second.add(r);
                    c.acknowledge(r, Integer.parseInt(r.value()) % 2 == 0 ? AcknowledgeType.ACCEPT : AcknowledgeType.REJECT);
                }
            }
            c.commitSync();
            Checks.check("second", second.size() + " " + deliveryCounts(second));
            Checks.check("after", c.poll(Duration.ofMillis(1500)).count());
        }
    }

    // A member that holds its records without acknowledging them: once the lock (1 s) runs out,
    // another member gets them, delivered again, and the late acknowledgement of the first fails.
    // The holder's client may fetch again by itself: a poll that found its buffer empty queues a
    // fetch event, and if the response with the records was handled first, that event sends one
    // more ShareFetch (and more while they come back empty), which competes with the other member
    // for the records when their lock runs out. Records it wins sit in its buffer until their lock
    // runs out too, and the other member then gets them one delivery later. So the check counts
    // every delivery, in both members: each record must come with delivery counts 1, 2, ..., n,
    // each once (each acquisition counts one delivery), the last one at the other member.
    static void lockTimeout(String bootstrap, String topic, String group, int records) {
        try (var holder = consumer(bootstrap, group, true); var other = consumer(bootstrap, group, false)) {
            holder.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> held = new ArrayList<>();
            long end = System.currentTimeMillis() + GIVE_UP_MS;
            while (held.isEmpty() && System.currentTimeMillis() < end) {
                holder.poll(Duration.ofMillis(200)).forEach(held::add);
            }
            Checks.check("held", held.size() + " " + deliveryCounts(held));
            other.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            end = System.currentTimeMillis() + GIVE_UP_MS;
            while (got.size() < held.size() && System.currentTimeMillis() < end) {
                other.poll(Duration.ofMillis(200)).forEach(got::add);
            }
            Checks.check("redelivered", got.size());
            other.commitSync();
            held.forEach(r -> holder.acknowledge(r, AcknowledgeType.ACCEPT));
            var late = holder.commitSync();
            Checks.check("late_ack_failed", late.values().stream().anyMatch(java.util.Optional::isPresent));
            // what the holder's own fetches took meanwhile (already in its buffer)
            List<ConsumerRecord<String, String>> ahead = new ArrayList<>(holder.poll(Duration.ofMillis(500)).records(
                new org.apache.kafka.common.TopicPartition(topic, 0)));
            Checks.check("holder_fetched_again", ahead.size() + " " + deliveryCounts(ahead));
            Checks.check("each_delivery_counted_once", eachDeliveryCountedOnce(held, ahead, got));
        }
    }

    // Per record value, the delivery counts seen in all the lists are exactly 1..n, and n was the
    // last list's (the member that got it last).
    static boolean eachDeliveryCountedOnce(List<ConsumerRecord<String, String>> first,
                                           List<ConsumerRecord<String, String>> between,
                                           List<ConsumerRecord<String, String>> last) {
        Map<String, List<Integer>> counts = new HashMap<>();
        for (var list : List.of(first, between, last)) {
            list.forEach(r -> counts.computeIfAbsent(r.value(), k -> new ArrayList<>())
                .add((int) r.deliveryCount().orElse((short) -1)));
        }
        Map<String, Integer> lastCount = new HashMap<>();
        last.forEach(r -> lastCount.put(r.value(), (int) r.deliveryCount().orElse((short) -1)));
        for (var e : counts.entrySet()) {
            List<Integer> seen = new ArrayList<>(e.getValue());
            seen.sort(null);
            boolean consecutive = true;
            for (int i = 0; i < seen.size(); i++) {
                consecutive &= seen.get(i) == i + 1;
            }
            if (!consecutive || !Integer.valueOf(seen.size()).equals(lastCount.get(e.getKey()))) {
                System.out.println("DELIVERIES " + e.getKey() + " " + e.getValue());
                return false;
            }
        }
        return counts.size() == first.size();
    }

    // share.delivery.count.limit=2: after two releases the records are archived.
    static void deliveryLimit(String bootstrap, String topic, String group, int records) {
        try (var c = consumer(bootstrap, group, true)) {
            c.subscribe(List.of(topic));
            Checks.check("first", pollAll(c, records, AcknowledgeType.RELEASE).size());
            Checks.check("second", pollAll(c, records, AcknowledgeType.RELEASE).size());
            Checks.check("third", c.poll(Duration.ofMillis(1500)).count());
        }
    }

    // Dead letters (KIP-1191; delivery limit 2, lock 1 s; one partition, so that each round comes in
    // one fetch): even values are REJECTed, odd ones RELEASEd; the member then holds the odd ones
    // (their second delivery) past their lock, so they reach the limit by timing out; its late
    // ACCEPT fails and nothing is delivered after that. The test reads the DLQ topic.
    static void deadLetters(String bootstrap, String topic, String group, int records) throws Exception {
        try (var c = consumer(bootstrap, group, true); var other = consumer(bootstrap, group, false)) {
            c.subscribe(List.of(topic));
            List<ConsumerRecord<String, String>> first = new ArrayList<>();
            long end = System.currentTimeMillis() + GIVE_UP_MS;
            while (first.size() < records && System.currentTimeMillis() < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    first.add(r);
                    c.acknowledge(r, Integer.parseInt(r.value()) % 2 == 0 ? AcknowledgeType.REJECT : AcknowledgeType.RELEASE);
                }
            }
            c.commitSync();
            Checks.check("first", first.size() + " " + deliveryCounts(first));
            List<ConsumerRecord<String, String>> held = new ArrayList<>();
            end = System.currentTimeMillis() + GIVE_UP_MS;
            while (held.isEmpty() && System.currentTimeMillis() < end) {
                c.poll(Duration.ofMillis(200)).forEach(held::add);
            }
            Checks.check("held", held.size() + " " + deliveryCounts(held));
            Thread.sleep(3000);  // the lock (1 s) runs out meanwhile
            held.forEach(r -> c.acknowledge(r, AcknowledgeType.ACCEPT));
            Checks.check("late_ack_failed", c.commitSync().values().stream().anyMatch(java.util.Optional::isPresent));
            other.subscribe(List.of(topic));
            Checks.check("after", other.poll(Duration.ofMillis(3000)).count());
            other.commitSync();
        }
    }

    // Committed, aborted and committed transactions: a read_committed share group sees only the
    // committed records, a read_uncommitted one (the default) all of them.
    static void readCommitted(String bootstrap, String topic, String group, int records) throws Exception {
        var p = Checks.producer(bootstrap);
        p.put("transactional.id", "share-txn");
        try (var producer = new KafkaProducer<String, String>(p)) {
            producer.initTransactions();
            for (String outcome : List.of("commit", "abort", "commit")) {
                producer.beginTransaction();
                for (int i = 0; i < records; i++) {
                    producer.send(new ProducerRecord<>(topic, 0, null, outcome + "-" + i));
                }
                producer.flush();
                if (outcome.equals("commit")) {
                    producer.commitTransaction();
                } else {
                    producer.abortTransaction();
                }
            }
        }
        var committed = consumeAll(bootstrap, topic, group, 2 * records);
        Checks.check("committed", committed.size());
        Checks.check("aborted_seen", committed.stream().anyMatch(v -> v.startsWith("abort")));
        setGroupConfigs(bootstrap, group + "-ru", Map.of("share.auto.offset.reset", "earliest"));
        Checks.check("uncommitted", consumeAll(bootstrap, topic, group + "-ru", 3 * records).size());
    }

    static List<String> consumeAll(String bootstrap, String topic, String group, int wanted) {
        List<String> out = new ArrayList<>();
        try (var c = consumer(bootstrap, group, false)) {
            c.subscribe(List.of(topic));
            long end = System.currentTimeMillis() + GIVE_UP_MS;
            while (out.size() < wanted && System.currentTimeMillis() < end) {
                c.poll(Duration.ofMillis(200)).forEach(r -> out.add(r.value()));
            }
            // and nothing more comes
            c.poll(Duration.ofMillis(1000)).forEach(r -> out.add(r.value()));
            c.commitSync();
        }
        return out;
    }
}
