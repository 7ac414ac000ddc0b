package kafkafast

/*
#include "librdkafka_api.h"

// dlq_route sends the records of one partition to q instead of the consumer's queue.
static int dlq_route(rd_kafka_t *rk, rd_kafka_queue_t *q, const char *topic, int32_t partition) {
	rd_kafka_queue_t *pq = rd_kafka_queue_get_partition(rk, topic, partition);
	if (!pq)
		return -1;
	rd_kafka_queue_forward(pq, q);
	rd_kafka_queue_destroy(pq);
	return 0;
}

#define DLQ_FIXED 48 // the fixed fields before the topic

static void dlq_put32(char **p, int32_t v) { memcpy(*p, &v, 4); *p += 4; }
static void dlq_put64(char **p, int64_t v) { memcpy(*p, &v, 8); *p += 8; }
static void dlq_putb(char **p, const void *b, int32_t n) { if (n > 0) { memcpy(*p, b, n); *p += n; } }

// dlq_pack writes m into buf and destroys it, or, when buf's cap bytes are too few,
// keeps it in *held and returns minus the bytes it needs. The layout (little endian):
// err, partition, offset, timestamp, timestamp type, leader epoch, and the lengths of
// topic, key, value (the error string when err is set) and the header count; then topic,
// key and value; then each header's name length, value length, name and value. A null
// key, value or header value has length -1.
static int64_t dlq_pack(rd_kafka_message_t *m, char *buf, int64_t cap, rd_kafka_message_t **held) {
	const char *topic = rd_kafka_topic_name(m->rkt);
	int32_t tlen = (int32_t)strlen(topic);
	const void *val = m->payload;
	int32_t vlen = val ? (int32_t)m->len : -1;
	int32_t klen = m->key ? (int32_t)m->key_len : -1;
	if (m->err) {
		val = m->payload ? (const char *)m->payload : rd_kafka_err2str(m->err);
		vlen = m->payload ? (int32_t)strnlen((const char *)val, m->len) : (int32_t)strlen((const char *)val);
		klen = -1;
	}
	rd_kafka_headers_t *hdrs = NULL;
	int32_t n = 0;
	if (!m->err && rd_kafka_message_headers(m, &hdrs) == 0)
		n = (int32_t)rd_kafka_header_cnt(hdrs);
	int64_t need = DLQ_FIXED + tlen + (klen > 0 ? klen : 0) + (vlen > 0 ? vlen : 0);
	for (int32_t i = 0; i < n; i++) {
		const char *name;
		const void *v;
		size_t size;
		rd_kafka_header_get_all(hdrs, (size_t)i, &name, &v, &size);
		need += 8 + strlen(name) + (v ? size : 0);
	}
	if (need > cap) {
		*held = m;
		return -need;
	}
	int tstype = 0;
	int64_t ts = rd_kafka_message_timestamp(m, &tstype);
	char *p = buf;
	dlq_put32(&p, m->err);
	dlq_put32(&p, m->partition);
	dlq_put64(&p, m->offset);
	dlq_put64(&p, ts);
	dlq_put32(&p, tstype);
	dlq_put32(&p, rd_kafka_message_leader_epoch(m));
	dlq_put32(&p, tlen);
	dlq_put32(&p, klen);
	dlq_put32(&p, vlen);
	dlq_put32(&p, n);
	dlq_putb(&p, topic, tlen);
	dlq_putb(&p, m->key, klen);
	dlq_putb(&p, val, vlen);
	for (int32_t i = 0; i < n; i++) {
		const char *name;
		const void *v;
		size_t size;
		rd_kafka_header_get_all(hdrs, (size_t)i, &name, &v, &size);
		int32_t nlen = (int32_t)strlen(name);
		int32_t hlen = v ? (int32_t)size : -1;
		dlq_put32(&p, nlen);
		dlq_put32(&p, hlen);
		dlq_putb(&p, name, nlen);
		dlq_putb(&p, v, hlen);
	}
	rd_kafka_message_destroy(m);
	*held = NULL;
	return need;
}

// dlq_next takes the next record from q, waiting up to timeout_ms, and packs it as
// dlq_pack does; 0 when none came.
static int64_t dlq_next(rd_kafka_queue_t *q, int timeout_ms, char *buf, int64_t cap, rd_kafka_message_t **held) {
	rd_kafka_message_t *m = rd_kafka_consume_queue(q, timeout_ms);
	if (!m)
		return 0;
	return dlq_pack(m, buf, cap, held);
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Queue is a librdkafka queue of the consumer's own that the records of routed
// partitions go to instead of the consumer's queue, which keeps its events (rebalances,
// errors, commit results) for Poll. Next takes a record with one call into librdkafka
// and builds its kafka.Message from one packed copy: confluent-kafka-go's Poll makes
// several calls into C per record and converts each header twice, which is most of the
// worker's CPU per record.
//
// librdkafka clears a partition's route when it stops fetching it (an unassignment) and
// keeps the partition's records in the partition's own queue until it is routed again,
// even through a new assignment (TestQueueRouteEndsWithTheAssignment): route a partition
// each time it starts or resumes fetching. A partition never routed hands its records
// to Poll. librdkafka filters a partition's records fetched before a seek, pause or
// revocation out of this queue as out of its own.
//
// A Queue is used by one goroutine; Close it before its consumer.
type Queue struct {
	rk     *C.rd_kafka_t
	q      *C.rd_kafka_queue_t
	buf    []byte
	topics map[string]*string // one name per topic, shared by its messages
}

// NewQueue returns an empty Queue of c's; an error wrapping ErrUnchecked when the
// linked releases are not the ones checked (Check): read with c's Poll then.
func NewQueue(c *kafka.Consumer) (*Queue, error) {
	rk, err := consumerHandle(c)
	if err != nil {
		return nil, err
	}
	q := &Queue{rk: rk, buf: make([]byte, 64<<10), topics: map[string]*string{}}
	if q.q = C.rd_kafka_queue_new(q.rk); q.q == nil {
		return nil, errors.New("kafkafast: librdkafka made no queue")
	}
	return q, nil
}

// Route sends the records of tps to q, those already in the partitions' own queues
// first. Call it before the partitions are assigned or resumed, so that none of their
// records is already queued for Poll.
func (q *Queue) Route(tps []kafka.TopicPartition) error {
	var errs []error
	for _, tp := range tps {
		if tp.Topic == nil {
			continue
		}
		name := C.CString(*tp.Topic)
		if C.dlq_route(q.rk, q.q, name, C.int32_t(tp.Partition)) != 0 {
			errs = append(errs, fmt.Errorf("kafkafast: librdkafka has no queue for %s [%d]", *tp.Topic, tp.Partition))
		}
		C.free(unsafe.Pointer(name))
	}
	return errors.Join(errs...)
}

// Next returns the next record (*kafka.Message), end of partition (kafka.PartitionEOF) or
// partition error (kafka.Error), as Poll would, waiting up to timeout; nil when none came.
func (q *Queue) Next(timeout time.Duration) kafka.Event {
	var held *C.rd_kafka_message_t
	n := int64(C.dlq_next(q.q, C.int(timeout/time.Millisecond), (*C.char)(unsafe.Pointer(&q.buf[0])), C.int64_t(len(q.buf)), &held))
	if n < 0 { // a record larger than the buffer: grow it and pack the record held for it
		q.buf = make([]byte, -n)
		n = int64(C.dlq_pack(held, (*C.char)(unsafe.Pointer(&q.buf[0])), C.int64_t(len(q.buf)), &held))
	}
	if n == 0 {
		return nil
	}
	return q.decode(q.buf[:n])
}

// Close destroys the queue: records routed to it after this are dropped, uncommitted.
func (q *Queue) Close() {
	if q.q != nil {
		C.rd_kafka_queue_destroy(q.q)
		q.q = nil
	}
}

// packedFixed is the size of the fixed fields dlq_pack writes before the topic.
const packedFixed = C.DLQ_FIXED

// message is a record and the leader epoch it points at, allocated together.
type message struct {
	m     kafka.Message
	epoch int32
}

// decode builds the event dlq_pack wrote into b, sharing nothing with b.
func (q *Queue) decode(b []byte) kafka.Event {
	le := binary.LittleEndian
	code := kafka.ErrorCode(int32(le.Uint32(b[0:])))
	partition := int32(le.Uint32(b[4:]))
	offset := kafka.Offset(int64(le.Uint64(b[8:])))
	ts := int64(le.Uint64(b[16:]))
	tstype := int32(le.Uint32(b[24:]))
	epoch := int32(le.Uint32(b[28:]))
	tlen, klen, vlen, n := int(le.Uint32(b[32:])), int(int32(le.Uint32(b[36:]))), int(int32(le.Uint32(b[40:]))), int(le.Uint32(b[44:]))
	topic := q.topic(b[packedFixed : packedFixed+tlen])
	// One copy holds the key, the value and the headers; each is a capped slice of it.
	data := append([]byte(nil), b[packedFixed+tlen:]...)
	if data == nil {
		data = []byte{}
	}
	at := 0
	take := func(l int) []byte {
		if l < 0 {
			return nil
		}
		s := data[at : at+l : at+l]
		at += l
		return s
	}
	key, val := take(klen), take(vlen)
	if code != kafka.ErrNoError {
		if code == kafka.ErrPartitionEOF {
			return kafka.PartitionEOF{Topic: topic, Partition: partition, Offset: offset}
		}
		return kafka.NewError(code, string(val), false)
	}
	r := &message{epoch: epoch}
	m := &r.m
	m.TopicPartition = kafka.TopicPartition{Topic: topic, Partition: partition, Offset: offset}
	m.Key, m.Value = key, val
	if ts != -1 {
		m.TimestampType = kafka.TimestampType(tstype)
		m.Timestamp = time.Unix(ts/1000, (ts%1000)*int64(time.Millisecond))
	}
	if epoch >= 0 {
		m.LeaderEpoch = &r.epoch
		m.TopicPartition.LeaderEpoch = &r.epoch
	}
	if n > 0 {
		m.Headers = make([]kafka.Header, n)
		for i := range m.Headers {
			nlen, hlen := int(le.Uint32(data[at:])), int(int32(le.Uint32(data[at+4:])))
			at += 8
			name := take(nlen)
			// The name's bytes are never written: the string can share them.
			m.Headers[i] = kafka.Header{Key: unsafe.String(unsafe.SliceData(name), nlen), Value: take(hlen)}
		}
	}
	return m
}

// topic returns the shared name of topic.
func (q *Queue) topic(name []byte) *string {
	if t, ok := q.topics[string(name)]; ok {
		return t
	}
	t := string(name)
	q.topics[t] = &t
	return &t
}
