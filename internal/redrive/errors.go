package redrive

import (
	"errors"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/dlqops/dlq/internal/store"
)

// failure is how a produce error is handled.
type failure uint8

const (
	failTransient failure = iota // retry after a backoff; commit nothing past the record
	failPermanent                // park the record with a reason
	failFatal                    // the producer is unusable: stop the worker
)

// classifyProduceError sorts a produce error. Permanent errors are the ones no retry
// fixes: the topic is gone, the record does not fit, we may not write there.
func classifyProduceError(err error) (failure, store.Reason) {
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return failTransient, ""
	}
	if ke.IsFatal() {
		return failFatal, ""
	}
	switch ke.Code() {
	case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic, kafka.ErrUnknownPartition, kafka.ErrTopicException:
		return failPermanent, store.ReasonUnknownTopic
	case kafka.ErrMsgSizeTooLarge, kafka.ErrRecordListTooLarge, kafka.ErrInvalidMsgSize:
		return failPermanent, store.ReasonTooLarge
	case kafka.ErrTopicAuthorizationFailed, kafka.ErrClusterAuthorizationFailed, kafka.ErrTransactionalIDAuthorizationFailed:
		return failPermanent, store.ReasonUnauthorized
	}
	return failTransient, ""
}
