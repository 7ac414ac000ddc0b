package kafkafast

/*
#include "librdkafka_api.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// settings are the go.* properties of a ConfigMap that the Producer honours.
type settings struct {
	eventsSize int                 // go.events.channel.size
	logs       chan kafka.LogEvent // go.logs.channel, when go.logs.channel.enable
}

// newConf is librdkafka's configuration for cm, written for confluent-kafka-go's
// NewProducer: every property but the go.* ones goes to librdkafka as confluent-kafka-go
// passes it (a bool as true or false, a number in decimal). Of the go.* properties, which
// are confluent-kafka-go's own, the Producer honours the events channel's size and the
// log channel; the others concern confluent-kafka-go's channels and delivery report
// copies, which the Producer does not have.
func newConf(cm kafka.ConfigMap) (*C.rd_kafka_conf_t, settings, error) {
	s := settings{eventsSize: 1_000_000} // confluent-kafka-go's default
	var logsEnabled bool
	conf := C.rd_kafka_conf_new()
	set := func(name, value string) error {
		cname, cvalue := C.CString(name), C.CString(value)
		defer C.free(unsafe.Pointer(cname))
		defer C.free(unsafe.Pointer(cvalue))
		var errstr [512]C.char
		if C.rd_kafka_conf_set(conf, cname, cvalue, &errstr[0], C.size_t(len(errstr))) != C.DLQ_CONF_OK {
			return fmt.Errorf("kafkafast: %s: %s", name, C.GoString(&errstr[0]))
		}
		return nil
	}
	for name, v := range cm {
		var err error
		switch name {
		case "go.events.channel.size":
			n, ok := v.(int)
			if !ok {
				err = fmt.Errorf("kafkafast: %s: %T is not an int", name, v)
			}
			s.eventsSize = n
		case "go.logs.channel.enable":
			b, ok := v.(bool)
			if !ok {
				err = fmt.Errorf("kafkafast: %s: %T is not a bool", name, v)
			}
			logsEnabled = b
		case "go.logs.channel":
			ch, ok := v.(chan kafka.LogEvent)
			if !ok {
				err = fmt.Errorf("kafkafast: %s: %T is not a chan kafka.LogEvent", name, v)
			}
			s.logs = ch
		default:
			if strings.HasPrefix(name, "go.") {
				continue
			}
			var value string
			if value, err = text(name, v); err == nil {
				err = set(name, value)
			}
		}
		if err != nil {
			C.rd_kafka_conf_destroy(conf)
			return nil, settings{}, err
		}
	}
	if !logsEnabled {
		s.logs = nil
	} else if s.logs == nil {
		C.rd_kafka_conf_destroy(conf)
		return nil, settings{}, fmt.Errorf("kafkafast: go.logs.channel.enable without go.logs.channel")
	} else if err := set("log.queue", "true"); err != nil {
		C.rd_kafka_conf_destroy(conf)
		return nil, settings{}, err
	}
	return conf, s, nil
}

// text is v as librdkafka takes it.
func text(name string, v kafka.ConfigValue) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		if v {
			return "true", nil
		}
		return "false", nil
	case int:
		return fmt.Sprint(v), nil
	case fmt.Stringer:
		return v.String(), nil
	}
	return "", fmt.Errorf("kafkafast: %s: a value of type %T", name, v)
}
