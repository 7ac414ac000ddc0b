package delivery

import (
	"errors"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/store"
)

// Class is how a failed produce is handled.
type Class uint8

const (
	Transient Class = iota // retry after a backoff
	Permanent              // park the record with the reason Classify gives
	Fatal                  // the producer is unusable: stop using it
)

// Classify sorts a produce error. Permanent errors are the ones no retry fixes: the
// topic is gone, the record does not fit, we may not write there. Anything else,
// including errors that are not Kafka's, is transient.
func Classify(err error) (Class, store.Reason) {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return Transient, ""
	}
	if ke.IsFatal() {
		return Fatal, ""
	}
	switch ke.Code() {
	case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic, kafka.ErrUnknownPartition, kafka.ErrTopicException:
		return Permanent, store.ReasonUnknownTopic
	case kafka.ErrMsgSizeTooLarge, kafka.ErrRecordListTooLarge, kafka.ErrInvalidMsgSize:
		return Permanent, store.ReasonTooLarge
	case kafka.ErrTopicAuthorizationFailed, kafka.ErrClusterAuthorizationFailed, kafka.ErrTransactionalIDAuthorizationFailed:
		return Permanent, store.ReasonUnauthorized
	}
	return Transient, ""
}
