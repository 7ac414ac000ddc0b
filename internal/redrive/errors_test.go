package redrive

import (
	"fmt"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

func TestClassifyProduceError(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		want   failure
		reason store.Reason
	}{
		"unknown topic":  {kafka.NewError(kafka.ErrUnknownTopicOrPart, "x", false), failPermanent, store.ReasonUnknownTopic},
		"too large":      {fmt.Errorf("wrapped: %w", kafka.NewError(kafka.ErrMsgSizeTooLarge, "x", false)), failPermanent, store.ReasonTooLarge},
		"not authorized": {kafka.NewError(kafka.ErrTopicAuthorizationFailed, "x", false), failPermanent, store.ReasonUnauthorized},
		"timed out":      {kafka.NewError(kafka.ErrMsgTimedOut, "x", false), failTransient, ""},
		"queue full":     {kafka.NewError(kafka.ErrQueueFull, "x", false), failTransient, ""},
		"fatal":          {kafka.NewError(kafka.ErrFatal, "x", true), failFatal, ""},
		"not kafka":      {fmt.Errorf("boom"), failTransient, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f, r := classifyProduceError(tc.err)
			require.Equal(t, tc.want, f)
			require.Equal(t, tc.reason, r)
		})
	}
}
