package console

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/dlqops/dlq/internal/api"
)

// The audit page shows a row's first shownIDs record ids and counts the rest, so it reads
// the API's answer for just that: a batch row names up to a batch of ids, and decoding
// each of them through reflection was most of the page's own time.

// auditRow is an audit entry as the audit page reads it.
type auditRow struct {
	api.AuditEntry
	RecordIDs shownRecordIDs `json:"record_ids"`
}

// auditRows is the audit page's reading of an api.AuditList.
type auditRows struct {
	Entries    []auditRow `json:"entries"`
	NextBefore int64      `json:"next_before"`
}

// shownRecordIDs are the first shownIDs ids of a JSON array of ids, and how many it holds.
type shownRecordIDs struct {
	First []int64
	Total int
}

var errRecordIDs = errors.New("console: record_ids is not an array of ids")

// UnmarshalJSON reads a JSON array of integers (or null) without decoding the ids past
// the first shownIDs.
func (s *shownRecordIDs) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		*s = shownRecordIDs{}
		return nil
	}
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return errRecordIDs
	}
	*s = shownRecordIDs{}
	for item := range bytes.SplitSeq(b[1:len(b)-1], []byte{','}) {
		item = bytes.TrimSpace(item)
		if len(item) == 0 {
			if s.Total == 0 {
				return nil // []
			}
			return errRecordIDs
		}
		if s.Total < shownIDs {
			id, err := strconv.ParseInt(string(item), 10, 64)
			if err != nil {
				return errRecordIDs
			}
			s.First = append(s.First, id)
		}
		s.Total++
	}
	return nil
}
