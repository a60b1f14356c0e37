// A stock Kafka Streams application with processing.guarantee=exactly_once_v2, for
// tests/e2e/test_kafka_streams.py: reads `input` (String key, String value holding an integer),
// re-groups the records by their key (groupBy, so Streams writes them through a repartition
// topic, <application.id>-by-key-repartition), sums them per key into a KTable kept in a
// persistent (RocksDB) store with a changelog topic (<application.id>-sums-changelog), and
// writes every updated sum to `output` (String key, String value).
//
//   java StreamsEos <bootstrap> <application.id> <state.dir> [key=value ...]
//
// The key=value arguments are more Streams (or client) configs. It runs until it is killed,
// printing "STATE <old> -> <new>" for each state transition and "RESTORED <store> <partition>
// <records>" when a store has been restored from its changelog; an exception that kills a stream
// thread is printed ("UNCAUGHT ...") and ends the process with status 1. SIGTERM closes the
// application cleanly (leaving the group, committing) and ends it.
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

public class StreamsEos {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        props.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "2");
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        for (int i = 3; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }

        StreamsBuilder builder = new StreamsBuilder();
        builder.stream("input", Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((key, value) -> key, Grouped.with("by-key", Serdes.String(), Serdes.String()))
            .aggregate(
                () -> 0L,
                (key, value, sum) -> sum + Long.parseLong(value),
                Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("sums")
                    .withKeySerde(Serdes.String())
                    .withValueSerde(Serdes.Long()))
            .toStream()
            .mapValues(sum -> Long.toString(sum))
            .to("output", Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch ended = new CountDownLatch(1);
        streams.setStateListener((newState, oldState) -> {
            System.out.println("STATE " + oldState + " -> " + newState);
            System.out.flush();
            if (newState == KafkaStreams.State.ERROR || newState == KafkaStreams.State.NOT_RUNNING) {
                ended.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("UNCAUGHT " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition partition, String store, long start, long end) {}

            @Override
            public void onBatchRestored(TopicPartition partition, String store, long batchEnd, long restored) {}

            @Override
            public void onRestoreEnd(TopicPartition partition, String store, long restored) {
                System.out.println("RESTORED " + store + " " + partition.partition() + " " + restored);
                System.out.flush();
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(30))));
        streams.start();
        ended.await();
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }
}
