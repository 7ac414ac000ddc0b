// A worker that stalls longer than the group's session (a process paused, a host
// frozen) is a zombie when it runs again: the group gave its partitions to another
// worker, whose transactions now own their records. The zombie may learn it from its
// consumer (the assignment lost) or from the transaction itself, whichever reaches the
// cluster first; either way its transaction cannot commit, and it must say so.

package redrive

import (
	"errors"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// errAssignmentLost: the consumer learned first; the group fenced this generation, so
// the open transaction could not commit its offsets.
var errAssignmentLost = errors.New("partitions lost (the group session expired) with a transaction open")

// fencedBy names who fenced the route's transaction when err is a fence, "" otherwise.
// The group refuses the transaction's offsets from a member it no longer knows, or from
// an earlier generation (TxnOffsetCommit answers UNKNOWN_MEMBER_ID or
// ILLEGAL_GENERATION, an abortable error); the transaction coordinator refuses a
// producer whose epoch a newer producer with its transactional.id took, or that it
// aborted at transaction.timeout.ms.
func fencedBy(err error) string {
	if errors.Is(err, errAssignmentLost) {
		return "the group: it gave this worker's partitions to another (its session expired)"
	}
	var ke kafka.Error
	if !errors.As(err, &ke) {
		return ""
	}
	switch ke.Code() {
	case kafka.ErrUnknownMemberID, kafka.ErrIllegalGeneration, kafka.ErrFencedInstanceID:
		return "the group: it moved on without this worker (its session expired) and refused the transaction's offsets"
	case kafka.ErrFenced, kafka.ErrProducerFenced, kafka.ErrInvalidProducerEpoch:
		return "the transaction coordinator: a newer producer with this transactional.id took over, or the transaction timed out"
	}
	return ""
}
