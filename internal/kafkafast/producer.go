package kafkafast

/*
#include "librdkafka_api.h"

// dlq_produce hands librdkafka one record, which it copies, with id as its opaque: the
// delivery report carries it back. hdrs holds n headers, each a 4-byte key length, a
// 4-byte value length (-1: null), the key, the value. A null key or value has length -1.
static int dlq_produce(rd_kafka_t *rk, rd_kafka_topic_t *rkt, int32_t partition, int64_t timestamp,
		const void *key, int32_t key_len, const void *val, int32_t val_len, const char *hdrs, int32_t n, uint64_t id) {
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
		DLQ_VTYPE_OPAQUE, (void *)(uintptr_t)id,
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
	"sync"
	"time"
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// Producer is a librdkafka producer of this package's own: Produce hands librdkafka a
// record with one call and a per-record id as its opaque, and each delivery report is
// matched to its record by that id when it comes back. confluent-kafka-go's Produce makes
// one call into C per header key and value, so producing this way costs the worker less
// CPU per redriven record. confluent-kafka-go's event loop cannot carry our id back (it
// looks an opaque up in its own map and drops one it does not know), so the Producer
// polls its own handle's events.
//
// Its delivery reports arrive on Events as *kafka.Message with the opaque given to
// Produce, beside kafka.Error for the client's errors; a report whose id the Producer
// does not know arrives as UnknownReport, which no record may be acknowledged under.
//
// Produce is called by one goroutine; Events is read by any; Close after Produce stopped.
type Producer struct {
	rk     *C.rd_kafka_t
	mainq  *C.rd_kafka_queue_t
	events chan kafka.Event
	logs   chan kafka.LogEvent // nil: librdkafka writes its lines to stderr

	// The producing goroutine's.
	topics map[string]*C.rd_kafka_topic_t
	packed []byte

	mu      sync.Mutex
	waiting map[uint64]any // produced, not reported yet
	lastID  uint64

	// The poller's.
	names   map[string]*string // one name per topic, shared by its reports
	stop    chan struct{}
	stopped chan struct{}
}

// UnknownReport is a delivery report with an id the Producer never gave or already
// matched.
type UnknownReport struct {
	ID             uint64
	TopicPartition kafka.TopicPartition
}

func (u UnknownReport) String() string {
	return fmt.Sprintf("a delivery report for %v with id %d, which no record produced is waiting for", u.TopicPartition, u.ID)
}

// NewProducer returns a Producer configured by cm as confluent-kafka-go's NewProducer
// would be (see newConf for the go.* properties it honours); an error wrapping
// ErrUnchecked when the linked librdkafka is not the release checked (Check): produce
// through confluent-kafka-go's Produce then.
func NewProducer(cm kafka.ConfigMap) (*Producer, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	conf, s, err := newConf(cm)
	if err != nil {
		return nil, err
	}
	events := C.int(C.DLQ_EVENT_DR | C.DLQ_EVENT_ERROR)
	if s.logs != nil {
		events |= C.DLQ_EVENT_LOG
	}
	C.rd_kafka_conf_set_events(conf, events)
	var errstr [512]C.char
	rk := C.rd_kafka_new(C.DLQ_PRODUCER, conf, &errstr[0], C.size_t(len(errstr)))
	if rk == nil {
		C.rd_kafka_conf_destroy(conf) // rd_kafka_new owns it only when it succeeds
		return nil, fmt.Errorf("kafkafast: new producer: %s", C.GoString(&errstr[0]))
	}
	p := &Producer{rk: rk, mainq: C.rd_kafka_queue_get_main(rk), events: make(chan kafka.Event, s.eventsSize), logs: s.logs,
		topics: map[string]*C.rd_kafka_topic_t{}, waiting: map[uint64]any{}, names: map[string]*string{},
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if p.logs != nil {
		C.rd_kafka_set_log_queue(rk, p.mainq)
	}
	go p.poll()
	return p, nil
}

// Produce hands librdkafka the record to topic's partition (kafka.PartitionAny: its
// partitioner chooses) with headers hdrs, as confluent-kafka-go's Produce does; its
// delivery report comes on Events with opaque. A zero timestamp is the time of the
// produce.
func (p *Producer) Produce(topic string, partition int32, key, value []byte, timestamp time.Time, hdrs []kafka.Header, opaque any) error {
	p.mu.Lock()
	p.lastID++
	id := p.lastID
	p.waiting[id] = opaque // before the produce: its report may come before the call returns
	p.mu.Unlock()
	err := p.produce(topic, partition, key, value, timestamp, hdrs, id)
	if err != nil {
		p.mu.Lock()
		delete(p.waiting, id)
		p.mu.Unlock()
	}
	return err
}

// produce hands librdkafka the record with id as its opaque.
func (p *Producer) produce(topic string, partition int32, key, value []byte, timestamp time.Time, hdrs []kafka.Header, id uint64) error {
	rkt := p.topics[topic]
	if rkt == nil {
		name := C.CString(topic)
		rkt = C.rd_kafka_topic_new(p.rk, name, nil)
		C.free(unsafe.Pointer(name))
		if rkt == nil {
			return fmt.Errorf("kafkafast: no librdkafka handle for topic %q", topic)
		}
		p.topics[topic] = rkt
	}
	packed := p.packed[:0]
	for _, h := range hdrs {
		packed = binary.LittleEndian.AppendUint32(packed, uint32(len(h.Key)))
		packed = binary.LittleEndian.AppendUint32(packed, uint32(length(h.Value)))
		packed = append(packed, h.Key...)
		packed = append(packed, h.Value...)
	}
	p.packed = packed
	var ts int64
	if !timestamp.IsZero() {
		ts = timestamp.UnixMilli()
	}
	code := C.dlq_produce(p.rk, rkt, C.int32_t(partition), C.int64_t(ts),
		pointer(key), C.int32_t(length(key)), pointer(value), C.int32_t(length(value)),
		(*C.char)(pointer(packed)), C.int32_t(len(hdrs)), C.uint64_t(id))
	if code != 0 {
		return kafka.NewError(kafka.ErrorCode(code), "", false)
	}
	return nil
}

// Events is where delivery reports, errors and UnknownReport come; closed by Close.
func (p *Producer) Events() chan kafka.Event { return p.events }

// Len is the number of records produced and not reported yet, with the reports and
// events librdkafka holds for the poller.
func (p *Producer) Len() int { return int(C.rd_kafka_outq_len(p.rk)) }

// Flush waits up to timeoutMs for every record to be reported, Events being read
// meanwhile, and returns how many are still outstanding.
func (p *Producer) Flush(timeoutMs int) int {
	deadline := time.Now().Add(time.Duration(timeoutMs) * time.Millisecond)
	for p.Len() > 0 && time.Now().Before(deadline) {
		C.rd_kafka_flush(p.rk, C.int(min(100, max(1, time.Until(deadline).Milliseconds()))))
	}
	return p.Len()
}

// Close stops the poller and destroys the handle: records not reported yet are dropped
// unreported. Events is closed.
func (p *Producer) Close() {
	close(p.stop)
	<-p.stopped
	for name, rkt := range p.topics {
		C.rd_kafka_topic_destroy(rkt)
		delete(p.topics, name)
	}
	C.rd_kafka_queue_destroy(p.mainq)
	C.rd_kafka_destroy(p.rk)
	close(p.events)
}

// Waiting is the number of records produced whose report did not come yet.
func (p *Producer) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}

// errUnknown is returned by match for an id not waiting.
var errUnknown = errors.New("kafkafast: unknown id")

// match takes the opaque of the record produced with id.
func (p *Producer) match(id uint64) (any, error) {
	opaque, ok := p.waiting[id]
	if !ok {
		return nil, errUnknown
	}
	delete(p.waiting, id)
	return opaque, nil
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
