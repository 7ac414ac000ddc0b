package kafkafast

/*
#include "librdkafka_api.h"

// dlq_report is one delivery report as the poller reads it.
typedef struct {
	uint64_t id;
	int64_t offset;
	int32_t err;
	int32_t partition;
	const char *topic;
} dlq_report;

enum { DLQ_REPORTS = 256 }; // taken from an event per call

// dlq_take_reports copies up to DLQ_REPORTS of ev's delivery reports not taken yet into
// out and returns how many it copied: 0 once all were.
static size_t dlq_take_reports(rd_kafka_event_t *ev, dlq_report *out) {
	const rd_kafka_message_t *ms[DLQ_REPORTS];
	size_t n = rd_kafka_event_message_array(ev, ms, DLQ_REPORTS);
	for (size_t i = 0; i < n; i++) {
		out[i].id = (uint64_t)(uintptr_t)ms[i]->_private;
		out[i].offset = ms[i]->offset;
		out[i].err = ms[i]->err;
		out[i].partition = ms[i]->partition;
		out[i].topic = rd_kafka_topic_name(ms[i]->rkt);
	}
	return n;
}
*/
import "C"

import (
	"time"
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// pollWait is how long the poller waits for an event before it looks at stop again.
const pollWait = 100 // ms

// poll is the poller goroutine: it turns the handle's events into Events' (and the log
// channel's) until Close.
func (p *Producer) poll() {
	defer close(p.stopped)
	reports := make([]C.dlq_report, C.DLQ_REPORTS)
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		ev := C.rd_kafka_queue_poll(p.mainq, pollWait)
		if ev == nil {
			continue
		}
		ok := true
		switch C.rd_kafka_event_type(ev) {
		case C.DLQ_EVENT_DR:
			for n := C.dlq_take_reports(ev, &reports[0]); n > 0 && ok; n = C.dlq_take_reports(ev, &reports[0]) {
				ok = p.deliver(reports[:n])
			}
		case C.DLQ_EVENT_ERROR:
			ok = p.send(p.clientError(ev))
		case C.DLQ_EVENT_LOG:
			var tag, msg *C.char
			var level C.int
			C.rd_kafka_event_log(ev, &tag, &msg, &level)
			select {
			case p.logs <- kafka.LogEvent{Name: C.GoString(C.rd_kafka_name(p.rk)), Tag: C.GoString(tag), Message: C.GoString(msg),
				Level: int(level), Timestamp: time.Now()}:
			case <-p.stop:
				ok = false
			}
		}
		C.rd_kafka_event_destroy(ev)
		if !ok {
			return
		}
	}
}

// deliver matches reports to their records and sends them on Events; false when Close
// stopped it.
func (p *Producer) deliver(reports []C.dlq_report) bool {
	evs := make([]kafka.Event, len(reports))
	p.mu.Lock()
	for i, r := range reports {
		tp := kafka.TopicPartition{Topic: p.topic(r.topic), Partition: int32(r.partition), Offset: kafka.Offset(r.offset)}
		if r.err != 0 {
			tp.Error = kafka.NewError(kafka.ErrorCode(r.err), "", false)
		}
		opaque, err := p.match(uint64(r.id))
		if err != nil {
			evs[i] = UnknownReport{ID: uint64(r.id), TopicPartition: tp}
			continue
		}
		evs[i] = &kafka.Message{TopicPartition: tp, Opaque: opaque}
	}
	p.mu.Unlock()
	for _, ev := range evs {
		if !p.send(ev) {
			return false
		}
	}
	return true
}

// clientError is the error ev reports: the producer's fatal error, with its own code and
// text, when ev says one was raised.
func (p *Producer) clientError(ev *C.rd_kafka_event_t) kafka.Error {
	code := C.rd_kafka_event_error(ev)
	if code != C.DLQ_ERR_FATAL {
		return kafka.NewError(kafka.ErrorCode(code), C.GoString(C.rd_kafka_event_error_string(ev)), false)
	}
	var errstr [512]C.char
	code = C.rd_kafka_fatal_error(p.rk, &errstr[0], C.size_t(len(errstr)))
	return kafka.NewError(kafka.ErrorCode(code), C.GoString(&errstr[0]), true)
}

// send puts ev on Events; false when Close stopped it first.
func (p *Producer) send(ev kafka.Event) bool {
	select {
	case p.events <- ev:
		return true
	case <-p.stop:
		return false
	}
}

// topic returns the shared name of the topic librdkafka names name.
func (p *Producer) topic(name *C.char) *string {
	b := unsafe.String((*byte)(unsafe.Pointer(name)), C.strlen(name))
	if t, ok := p.names[b]; ok {
		return t
	}
	t := C.GoString(name)
	p.names[t] = &t
	return &t
}
