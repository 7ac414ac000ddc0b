package dev.dlq.spring;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.adapter.FilteringMessageListenerAdapter;
import org.springframework.kafka.listener.adapter.RecordFilterStrategy;

/**
 * A Spring Kafka listener container of one consumer group that reads a topic and the
 * group's own redrive topic ({topic}.redrive.{group}, a route's redrive_to group_topic),
 * and discards records a redrive addressed to another group (dlq-target-group, a route's
 * redrive_to group_header) with a RecordFilterStrategy, acknowledging them.
 *
 * <p>Arguments: bootstrap servers, topic, group. It prints "started" once running, then
 * one line per record its listener is given, "received TOPIC KEY", until it is killed.
 */
public final class GroupListener {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2];
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);

        // The change a listener needs for group_topic: its group's redrive topic beside its topic.
        ContainerProperties container = new ContainerProperties(topic, topic + ".redrive." + group);
        // The filter a listener needs for group_header: records addressed to another group.
        RecordFilterStrategy<String, String> addressedElsewhere = r -> {
            Header h = r.headers().lastHeader("dlq-target-group");
            return h != null && h.value() != null && h.value().length > 0
                    && !group.equals(new String(h.value(), StandardCharsets.UTF_8));
        };
        MessageListener<String, String> listener = r -> {
            System.out.println("received " + r.topic() + " " + r.key());
            System.out.flush();
        };
        container.setMessageListener(new FilteringMessageListenerAdapter<>(listener, addressedElsewhere, true));
        KafkaMessageListenerContainer<String, String> c =
                new KafkaMessageListenerContainer<>(new DefaultKafkaConsumerFactory<>(props), container);
        c.start();
        System.out.println("started");
        System.out.flush();
        Thread.currentThread().join();
    }
}
