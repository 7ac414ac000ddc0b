package delivery

import (
	"fmt"
	"testing"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

func TestClassify(t *testing.T) {
	for name, tc := range map[string]struct {
		err    error
		want   Class
		reason store.Reason
	}{
		"unknown topic":  {kafka.NewError(kafka.ErrUnknownTopicOrPart, "x", false), Permanent, store.ReasonUnknownTopic},
		"too large":      {fmt.Errorf("wrapped: %w", kafka.NewError(kafka.ErrMsgSizeTooLarge, "x", false)), Permanent, store.ReasonTooLarge},
		"not authorized": {kafka.NewError(kafka.ErrTopicAuthorizationFailed, "x", false), Permanent, store.ReasonUnauthorized},
		"timed out":      {kafka.NewError(kafka.ErrMsgTimedOut, "x", false), Transient, ""},
		"queue full":     {kafka.NewError(kafka.ErrQueueFull, "x", false), Transient, ""},
		"fatal":          {kafka.NewError(kafka.ErrFatal, "x", true), Fatal, ""},
		"not kafka":      {fmt.Errorf("boom"), Transient, ""},
	} {
		t.Run(name, func(t *testing.T) {
			f, r := Classify(tc.err)
			require.Equal(t, tc.want, f)
			require.Equal(t, tc.reason, r)
		})
	}
}
