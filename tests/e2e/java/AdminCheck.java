// Drives eosbroker's admin APIs with a stock Java Admin client (compiled against kafka-clients 3.9
// and 4.4): describeTopics (4.x tries DescribeTopicPartitions, falling back to Metadata),
// listOffsets by spec at both isolation levels, describeTransactions / listTransactions /
// describeProducers on an open transaction, a read_committed consumer group that subscribes,
// describeConsumerGroups / listConsumerGroupOffsets, topic configs (with documentation), deleteRecords,
// describeLogDirs and describeCluster. Prints one "CHECK name value" line per result.
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

public class AdminCheck {
    static String bootstrap;
    static Admin admin;

    public static void main(String[] args) throws Exception {
        bootstrap = args[0];
        String topic = args[1];
        TopicPartition p0 = new TopicPartition(topic, 0);
        admin = Admin.create(Checks.admin(bootstrap));
        admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        Checks.check("partitions", d.partitions().size());
        Checks.check("leader", d.partitions().get(0).leader().id());
        Checks.check("topic_id_set", d.topicId() != null && !d.topicId().toString().equals("AAAAAAAAAAAAAAAAAAAAAA"));

        try (KafkaProducer<String, String> p = new KafkaProducer<>(producerProps())) {
            for (int i = 0; i < 10; i++) p.send(new ProducerRecord<>(topic, 0, 1000L + i, "k" + i, "plain-" + i));
            p.flush();
        }
        offsets("before_txn", p0);
        Properties tp = producerProps();
        tp.put("transactional.id", topic + "-txn");
        try (KafkaProducer<String, String> txn = new KafkaProducer<>(tp)) {
            txn.initTransactions();
            txn.beginTransaction();
            for (int i = 0; i < 3; i++) txn.send(new ProducerRecord<>(topic, 0, 2000L + i, "t" + i, "txn-" + i));
            txn.flush();
            offsets("open_txn", p0);
            transactions(topic + "-txn", p0);
            txn.commitTransaction();
        }
        consumerGroup(topic, topic + "-group", 13);

        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        AlterConfigOp op = new AlterConfigOp(new ConfigEntry("retention.ms", "3600000"), AlterConfigOp.OpType.SET);
        admin.incrementalAlterConfigs(Map.of(res, List.of(op))).all().get();
        Config config = admin.describeConfigs(List.of(res)).all().get().get(res);
        Checks.check("retention_ms", config.get("retention.ms").value());
        Checks.check("retention_ms_source", config.get("retention.ms").source());
        Checks.check("cleanup_policy", config.get("cleanup.policy").value());
        // DescribeConfigs v3+ include_documentation: a line on each config, null unasked
        DescribeConfigsOptions withDocs = new DescribeConfigsOptions().includeDocumentation(true);
        Config documented = admin.describeConfigs(List.of(res), withDocs).all().get().get(res);
        Checks.check("retention_ms_doc", documented.get("retention.ms").documentation().split("\\.")[0]);
        Checks.check("retention_ms_doc_unasked", config.get("retention.ms").documentation());
        ConfigResource brokerRes = new ConfigResource(ConfigResource.Type.BROKER, "1");
        Config brokerConfig = admin.describeConfigs(List.of(brokerRes), withDocs).all().get().get(brokerRes);
        Checks.check("num_partitions_doc", brokerConfig.get("num.partitions").documentation().split("\\.")[0]);

        DeletedRecords deleted = admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(p0).get();
        Checks.check("low_watermark", deleted.lowWatermark());
        Checks.check("earliest_after_delete", admin.listOffsets(Map.of(p0, OffsetSpec.earliest())).partitionResult(p0).get().offset());

        Map<Integer, Map<String, LogDirDescription>> dirs = admin.describeLogDirs(List.of(1)).allDescriptions().get();
        LogDirDescription dir = dirs.get(1).values().iterator().next();
        Checks.check("log_dirs", dirs.get(1).size());
        Checks.check("p0_size_positive", dir.replicaInfos().get(p0).size() > 0);

        DescribeClusterResult cluster = admin.describeCluster();
        Checks.check("nodes", cluster.nodes().get().size());
        Checks.check("controller", cluster.controller().get().id());
        admin.close();
    }

    static Properties producerProps() {
        Properties p = Checks.producer(bootstrap);
        p.put("linger.ms", "20");
        return p;
    }

    static long offset(TopicPartition tp, OffsetSpec spec, IsolationLevel level) throws Exception {
        ListOffsetsOptions options = new ListOffsetsOptions(level);
        return admin.listOffsets(Map.of(tp, spec), options).partitionResult(tp).get().offset();
    }

    static void offsets(String tag, TopicPartition tp) throws Exception {
        for (IsolationLevel level : IsolationLevel.values()) {
            String l = level == IsolationLevel.READ_COMMITTED ? "rc" : "ru";
            Checks.check(tag + "_earliest_" + l, offset(tp, OffsetSpec.earliest(), level));
            Checks.check(tag + "_latest_" + l, offset(tp, OffsetSpec.latest(), level));
            Checks.check(tag + "_max_ts_" + l, offset(tp, OffsetSpec.maxTimestamp(), level));
            Checks.check(tag + "_for_ts_1004_" + l, offset(tp, OffsetSpec.forTimestamp(1004), level));
            Checks.check(tag + "_for_ts_2001_" + l, offset(tp, OffsetSpec.forTimestamp(2001), level));
        }
    }

    static void transactions(String txnId, TopicPartition tp) throws Exception {
        boolean listed = false;
        for (TransactionListing t : admin.listTransactions().all().get()) {
            if (t.transactionalId().equals(txnId)) {
                listed = true;
                Checks.check("listed_state", t.state());
            }
        }
        Checks.check("txn_listed", listed);
        TransactionDescription td = admin.describeTransactions(List.of(txnId)).description(txnId).get();
        Checks.check("txn_state", td.state());
        Checks.check("txn_partitions", td.topicPartitions());
        Checks.check("txn_coordinator", td.coordinatorId());
        List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers();
        Checks.check("producers", producers.size());
        long open = producers.stream().filter(p -> p.currentTransactionStartOffset().isPresent()).count();
        Checks.check("producers_in_txn", open);
        Checks.check("txn_start_offset", producers.stream().filter(p -> p.currentTransactionStartOffset().isPresent())
                .map(p -> p.currentTransactionStartOffset().getAsLong()).findFirst().orElse(-1L));
    }

    static void consumerGroup(String topic, String group, int expected) throws Exception {
        Properties cp = Checks.consumer(bootstrap);
        cp.put("group.id", group);
        cp.put("client.id", group + "-client");
        cp.put("isolation.level", "read_committed");
        cp.put("auto.offset.reset", "earliest");
        int got = 0;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (got < expected && System.currentTimeMillis() < deadline) {
                got += c.poll(Duration.ofMillis(200)).count();
            }
            c.commitSync();
            Checks.check("group_consumed", got);
            ConsumerGroupDescription g = admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
            Checks.check("group_members", g.members().size());
            Checks.check("group_client", g.members().iterator().next().clientId());
            Checks.check("group_assigned", g.members().iterator().next().assignment().topicPartitions().size());
            Checks.check("group_coordinator", g.coordinator().id());
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            Checks.check("group_committed_p0", committed.get(new TopicPartition(topic, 0)).offset());
        }
        boolean listed = admin.listConsumerGroups().all().get().stream().anyMatch(l -> l.groupId().equals(group));
        Checks.check("group_listed", listed);
    }
}
