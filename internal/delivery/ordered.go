package delivery

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

// The part of librdkafka's API (rdkafka.h, linked by confluent-kafka-go) that Ordered
// calls. TestOrderedDeclarationsMatchLibrdkafka checks it against the linked header.
typedef struct rd_kafka_s rd_kafka_t;
typedef struct rd_kafka_topic_s rd_kafka_topic_t;
typedef struct rd_kafka_topic_conf_s rd_kafka_topic_conf_t;
typedef struct rd_kafka_headers_s rd_kafka_headers_t;
rd_kafka_topic_t *rd_kafka_topic_new(rd_kafka_t *rk, const char *topic, rd_kafka_topic_conf_t *conf);
void rd_kafka_topic_destroy(rd_kafka_topic_t *rkt);
rd_kafka_headers_t *rd_kafka_headers_new(size_t initial_count);
void rd_kafka_headers_destroy(rd_kafka_headers_t *hdrs);
int rd_kafka_header_add(rd_kafka_headers_t *hdrs, const char *name, ssize_t name_size, const void *value, ssize_t value_size);
int rd_kafka_producev(rd_kafka_t *rk, ...);

enum { DLQ_VTYPE_END = 0, DLQ_VTYPE_RKT = 2, DLQ_VTYPE_PARTITION = 3, DLQ_VTYPE_VALUE = 4, DLQ_VTYPE_KEY = 5,
       DLQ_VTYPE_MSGFLAGS = 7, DLQ_VTYPE_TIMESTAMP = 8, DLQ_VTYPE_HEADERS = 10 };
enum { DLQ_MSG_F_COPY = 0x2 };

// dlq_produce hands librdkafka one record, which it copies. hdrs holds n headers, each
// a 4-byte key length, a 4-byte value length (-1: null), the key, the value. A null key
// or value has length -1.
static int dlq_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition, int64_t timestamp,
		const void *key, int32_t key_len, const void *val, int32_t val_len, const char *hdrs, int32_t n) {
	rd_kafka_headers_t *list = NULL;
	if (n > 0) {
		list = rd_kafka_headers_new((size_t)n);
		for (int32_t i = 0; i < n; i++) {
			int32_t klen, vlen;
			memcpy(&klen, hdrs, 4);
			memcpy(&vlen, hdrs + 4, 4);
			hdrs += 8;
			const char *k = hdrs;
			hdrs += klen;
			const void *v = vlen < 0 ? NULL : hdrs;
			if (vlen > 0)
				hdrs += vlen;
			rd_kafka_header_add(list, k, klen, v, vlen);
		}
	}
	static const char empty[1];
	if (key_len == 0)
		key = empty; // empty, not null
	if (val_len == 0)
		val = empty;
	int err = rd_kafka_producev(rk,
		DLQ_VTYPE_RKT, rkt,
		DLQ_VTYPE_PARTITION, partition,
		DLQ_VTYPE_MSGFLAGS, (int)DLQ_MSG_F_COPY,
		DLQ_VTYPE_VALUE, val_len < 0 ? NULL : (void *)val, (size_t)(val_len < 0 ? 0 : val_len),
		DLQ_VTYPE_KEY, key_len < 0 ? NULL : key, (size_t)(key_len < 0 ? 0 : key_len),
		DLQ_VTYPE_TIMESTAMP, timestamp,
		DLQ_VTYPE_HEADERS, list,
		DLQ_VTYPE_END);
	if (err && list)
		rd_kafka_headers_destroy(list);
	return err;
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/headers"
)

// Ordered produces records with one call into librdkafka each and gives each delivery
// report back its record's opaque by order: librdkafka reports an idempotent producer's
// records in the order they were produced to each partition. confluent-kafka-go's
// Produce makes one call into C per header key and value, and keeps each opaque in a
// map behind a lock; producing this way instead cut the worker's CPU per record by 8 to
// 15 % (BenchmarkWorker, see the README's Benchmarks). Its reports arrive on the
// producer's events channel with a nil opaque, and Match finds it.
//
// Produce is called by one goroutine, Match by any; Close after both stopped.
type Ordered struct {
	rk *C.rd_kafka_t

	// The producing goroutine's.
	topics map[string]*C.rd_kafka_topic_t
	hdrs   []kafka.Header
	vals   headers.Scratch
	packed []byte

	mu      sync.Mutex
	waiting map[Destination]*opaques // produced, not reported yet
	lastOff map[Destination]kafka.Offset
}

// opaques is a queue of the opaques of one partition's records, oldest first.
type opaques struct {
	q    []any
	head int
}

// NewOrdered returns an Ordered producing through p, which must be idempotent and
// outlive it.
func NewOrdered(p *kafka.Producer) (*Ordered, error) {
	rk := reflect.ValueOf(p).Elem().FieldByName("handle").FieldByName("rk")
	if rk.Kind() != reflect.Pointer || rk.IsNil() {
		return nil, errors.New("delivery: confluent-kafka-go's Producer has no librdkafka handle where Ordered looks for it")
	}
	return &Ordered{rk: (*C.rd_kafka_t)(rk.UnsafePointer()), topics: map[string]*C.rd_kafka_topic_t{},
		waiting: map[Destination]*opaques{}, lastOff: map[Destination]kafka.Offset{}}, nil
}

// Produce hands librdkafka the record src to dest, its headers encoded from env for this
// hop with opts, as Produce does; its delivery report comes with a nil opaque, which
// Match turns into opaque.
func (o *Ordered) Produce(dest Destination, src Source[kafka.Header], env headers.Envelope, opts headers.EncodeOptions, opaque any) error {
	if dest.Partition < 0 { // librdkafka's partitioner would choose: no report could be matched
		return fmt.Errorf("delivery: no partition chosen for a record to %s", dest.Topic)
	}
	rkt := o.topics[dest.Topic]
	if rkt == nil {
		name := C.CString(dest.Topic)
		rkt = C.rd_kafka_topic_new(o.rk, name, nil)
		C.free(unsafe.Pointer(name))
		if rkt == nil {
			return fmt.Errorf("delivery: no librdkafka handle for topic %q", dest.Topic)
		}
		o.topics[dest.Topic] = rkt
	}
	o.hdrs = headers.AppendEncoded(o.hdrs[:0], &o.vals, src.Headers, env, opts)
	packed := o.packed[:0]
	for _, h := range o.hdrs {
		packed = binary.LittleEndian.AppendUint32(packed, uint32(len(h.Key)))
		packed = binary.LittleEndian.AppendUint32(packed, uint32(length(h.Value)))
		packed = append(packed, h.Key...)
		packed = append(packed, h.Value...)
	}
	o.packed = packed
	clear(o.hdrs) // holds no record until the next
	var ts int64
	if !src.Timestamp.IsZero() {
		ts = src.Timestamp.UnixMilli()
	}
	// Under the lock from before the call until the opaque is queued: a report cannot
	// be matched before its record is.
	o.mu.Lock()
	defer o.mu.Unlock()
	code := C.dlq_produce(o.rk, rkt, C.int32_t(dest.Partition), C.int64_t(ts),
		pointer(src.Key), C.int32_t(length(src.Key)), pointer(src.Value), C.int32_t(length(src.Value)),
		(*C.char)(pointer(packed)), C.int32_t(len(o.hdrs)))
	if code != 0 {
		return kafka.NewError(kafka.ErrorCode(code), "", false)
	}
	w := o.waiting[dest]
	if w == nil {
		w = &opaques{}
		o.waiting[dest] = w
	}
	w.q = append(w.q, opaque)
	return nil
}

// Match returns the opaque of the record m reports: the oldest one produced to m's
// partition and not reported yet. An error means the reports are not in the order the
// records were produced, which no record may be acknowledged under.
func (o *Ordered) Match(m *kafka.Message) (any, error) {
	if m.TopicPartition.Topic == nil {
		return nil, errors.New("delivery: a delivery report without its topic")
	}
	dest := Destination{Topic: *m.TopicPartition.Topic, Partition: m.TopicPartition.Partition}
	o.mu.Lock()
	defer o.mu.Unlock()
	w := o.waiting[dest]
	if w == nil || w.head == len(w.q) {
		return nil, fmt.Errorf("delivery: a delivery report for %s [%d] with no record produced there waiting for it", dest.Topic, dest.Partition)
	}
	if off := m.TopicPartition.Offset; m.TopicPartition.Error == nil {
		if last, ok := o.lastOff[dest]; ok && off <= last {
			return nil, fmt.Errorf("delivery: delivery reports for %s [%d] out of produce order: offset %d after %d", dest.Topic, dest.Partition, off, last)
		}
		o.lastOff[dest] = off
	}
	opaque := w.q[w.head]
	w.q[w.head] = nil
	w.head++
	if w.head == len(w.q) {
		w.q, w.head = w.q[:0], 0
	} else if w.head > 1024 && w.head*2 > len(w.q) {
		w.q = w.q[:copy(w.q, w.q[w.head:])]
		w.head = 0
	}
	return opaque, nil
}

// Close releases the topic handles; the producer is closed after it.
func (o *Ordered) Close() {
	for name, rkt := range o.topics {
		C.rd_kafka_topic_destroy(rkt)
		delete(o.topics, name)
	}
}

// length is b's length, -1 for nil (librdkafka's null).
func length(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// pointer is b's first byte, or nil when it has none.
func pointer(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
