package dev.dlq.producers;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A share-group consumer that rejects every record whose key starts with "poison", so that
 * the broker writes it to the group's dead-letter topic, and accepts the others.
 *
 * <p>Arguments: bootstrap servers, topic, group, DLQ topic, copy the record (true/false).
 * It configures the group first, then consumes until it is killed, printing one line per
 * acknowledgement on stdout.
 */
public final class ShareRejector {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1], group = args[2], dlq = args[3], copy = args[4];
        Properties admin = new Properties();
        admin.put("bootstrap.servers", bootstrap);
        try (Admin a = Admin.create(admin)) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            a.incrementalAlterConfigs(Map.of(res, List.of(
                    set("share.auto.offset.reset", "earliest"),
                    set("errors.deadletterqueue.topic.name", dlq),
                    set("errors.deadletterqueue.copy.record.enable", copy)))).all().get();
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        try (KafkaShareConsumer<byte[], byte[]> c = new KafkaShareConsumer<>(p)) {
            c.subscribe(List.of(topic));
            while (true) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    boolean poison = r.key() != null && new String(r.key()).startsWith("poison");
                    c.acknowledge(r, poison ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT);
                    System.out.println((poison ? "rejected " : "accepted ") + r.partition() + "/" + r.offset());
                }
                c.commitSync();
                System.out.flush();
            }
        }
    }

    private static AlterConfigOp set(String name, String value) {
        return new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET);
    }
}
