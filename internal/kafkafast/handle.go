package kafkafast

/*
#include "librdkafka_api.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// consumerHandle is c's librdkafka handle, which confluent-kafka-go keeps in the private
// field handle.rk of its Consumer. This is the one place that reaches into the
// library's private fields, and only after Check: a renamed or retyped field is an
// error here, at start-up, never a wrong pointer.
func consumerHandle(c *kafka.Consumer) (*C.rd_kafka_t, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if c.IsClosed() {
		return nil, errors.New("kafkafast: the consumer is closed")
	}
	var rk reflect.Value
	if h := reflect.ValueOf(c).Elem().FieldByName("handle"); h.Kind() == reflect.Struct {
		rk = h.FieldByName("rk")
	}
	if rk.Kind() != reflect.Pointer || rk.Type().Elem().Name() != "_Ctype_struct_rd_kafka_s" {
		return nil, fmt.Errorf("%w: confluent-kafka-go's Consumer has no librdkafka handle in handle.rk", ErrUnchecked)
	}
	if rk.IsNil() {
		return nil, errors.New("kafkafast: the consumer has no librdkafka handle")
	}
	return (*C.rd_kafka_t)(rk.UnsafePointer()), nil
}
