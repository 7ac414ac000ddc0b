// The part of librdkafka's API (rdkafka.h, bundled and linked by confluent-kafka-go)
// that this package calls, declared here instead of including rdkafka.h, which
// confluent-kafka-go keeps inside its module. TestDeclarationsMatchLibrdkafka checks
// every line against the bundled header; Check refuses any other librdkafka release.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_conf_s rd_kafka_conf_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef struct rd_kafka_queue_s rd_kafka_queue_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
typedef struct rd_kafka_op_s rd_kafka_event_t;
typedef struct rd_kafka_message_s {
	int err;
	rd_kafka_topic_t *rkt;
	int32_t partition;
	void *payload;
	size_t len;
	void *key;
	size_t key_len;
	int64_t offset;
	void *_private;
} rd_kafka_message_t;

enum { DLQ_PRODUCER = 0 };
enum { DLQ_CONF_OK = 0 };
enum { DLQ_EVENT_DR = 0x1, DLQ_EVENT_LOG = 0x4, DLQ_EVENT_ERROR = 0x8 };
enum { DLQ_ERR_FATAL = -150 };
enum { DLQ_VTYPE_END = 0, DLQ_VTYPE_RKT = 2, DLQ_VTYPE_PARTITION = 3, DLQ_VTYPE_VALUE = 4, DLQ_VTYPE_KEY = 5,
       DLQ_VTYPE_OPAQUE = 6, DLQ_VTYPE_MSGFLAGS = 7, DLQ_VTYPE_TIMESTAMP = 8, DLQ_VTYPE_HEADERS = 10 };
enum { DLQ_MSG_F_COPY = 0x2 };

// Consuming (queue.go).
rd_kafka_queue_t *rd_kafka_queue_new(rd_kafka_t *rk);
void rd_kafka_queue_destroy(rd_kafka_queue_t *rkqu);
rd_kafka_queue_t *rd_kafka_queue_get_partition(rd_kafka_t *rk, const char *topic, int32_t partition);
void rd_kafka_queue_forward(rd_kafka_queue_t *src, rd_kafka_queue_t *dst);
rd_kafka_message_t *rd_kafka_consume_queue(rd_kafka_queue_t *rkqu, int timeout_ms);
void rd_kafka_message_destroy(rd_kafka_message_t *rkmessage);
int64_t rd_kafka_message_timestamp(const rd_kafka_message_t *rkmessage, int *tstype);
int32_t rd_kafka_message_leader_epoch(const rd_kafka_message_t *rkmessage);
int rd_kafka_message_headers(const rd_kafka_message_t *rkmessage, rd_kafka_headers_t **hdrsp);
size_t rd_kafka_header_cnt(const rd_kafka_headers_t *hdrs);
int rd_kafka_header_get_all(const rd_kafka_headers_t *hdrs, size_t idx, const char **namep, const void **valuep, size_t *sizep);
const char *rd_kafka_topic_name(const rd_kafka_topic_t *rkt);
const char *rd_kafka_err2str(int err);

// Producing (producer.go, events.go).
rd_kafka_conf_t *rd_kafka_conf_new(void);
void rd_kafka_conf_destroy(rd_kafka_conf_t *conf);
int rd_kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr, size_t errstr_size);
void rd_kafka_conf_set_events(rd_kafka_conf_t *conf, int events);
rd_kafka_t *rd_kafka_new(int type, rd_kafka_conf_t *conf, char *errstr, size_t errstr_size);
void rd_kafka_destroy(rd_kafka_t *rk);
const char *rd_kafka_name(const rd_kafka_t *rk);
int rd_kafka_set_log_queue(rd_kafka_t *rk, rd_kafka_queue_t *rkqu);
rd_kafka_queue_t *rd_kafka_queue_get_main(rd_kafka_t *rk);
rd_kafka_event_t *rd_kafka_queue_poll(rd_kafka_queue_t *rkqu, int timeout_ms);
int rd_kafka_event_type(const rd_kafka_event_t *rkev);
void rd_kafka_event_destroy(rd_kafka_event_t *rkev);
size_t rd_kafka_event_message_array(rd_kafka_event_t *rkev, const rd_kafka_message_t **rkmessages, size_t size);
int rd_kafka_event_error(rd_kafka_event_t *rkev);
const char *rd_kafka_event_error_string(rd_kafka_event_t *rkev);
int rd_kafka_event_log(rd_kafka_event_t *rkev, const char **fac, const char **str, int *level);
int rd_kafka_fatal_error(rd_kafka_t *rk, char *errstr, size_t errstr_size);
int rd_kafka_outq_len(rd_kafka_t *rk);
int rd_kafka_flush(rd_kafka_t *rk, int timeout_ms);
rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf);
void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt);
rd_kafka_headers_t *rd_kafka_headers_new(size_t initial_count);
void rd_kafka_headers_destroy(rd_kafka_headers_t *hdrs);
int rd_kafka_header_add(rd_kafka_headers_t *hdrs, const char *name, ssize_t name_size, const void *value, ssize_t value_size);
int rd_kafka_producev(rd_kafka_t *rk, ...);
