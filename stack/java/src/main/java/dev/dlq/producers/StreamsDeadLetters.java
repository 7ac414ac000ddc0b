package dev.dlq.producers;

import java.util.Properties;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A Kafka Streams application that copies a topic to another and fails on every record
 * whose key starts with "poison": its processing exception handler writes that record to
 * the dead-letter topic (errors.dead.letter.queue.topic.name, KIP-1034) and continues.
 *
 * <p>Arguments: bootstrap servers, application id, source topic, sink topic, DLQ topic.
 * It runs until it is killed.
 */
public final class StreamsDeadLetters {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], app = args[1], source = args[2], sink = args[3], dlq = args[4];
        StreamsBuilder b = new StreamsBuilder();
        b.stream(source, Consumed.with(Serdes.ByteArray(), Serdes.ByteArray()))
                .mapValues((key, value) -> {
                    if (key != null && new String(key).startsWith("poison")) {
                        throw new IllegalStateException("poison record refused");
                    }
                    return value;
                })
                .to(sink, Produced.with(Serdes.ByteArray(), Serdes.ByteArray()));
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("application.id", app);
        p.put("auto.offset.reset", "earliest");
        p.put("processing.exception.handler", LogAndContinueProcessingExceptionHandler.class.getName());
        p.put("errors.dead.letter.queue.topic.name", dlq);
        p.put("state.dir", System.getProperty("java.io.tmpdir") + "/" + app);
        KafkaStreams s = new KafkaStreams(b.build(), p);
        Runtime.getRuntime().addShutdownHook(new Thread(s::close));
        s.start();
        Thread.currentThread().join();
    }
}
