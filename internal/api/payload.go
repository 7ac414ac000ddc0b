package api

import (
	"fmt"
	"net/http"
)

// probNoPayload: a replay selects records that hold no record to replay. Each is a share
// group's dead letter parked source_unavailable with key and value null, the broker's
// pointer to a source record that was gone: replayed, it would produce a record that never
// existed (no key, no value, the pointer's headers).
var probNoPayload = Problem{Type: typePrefix + "no-payload", Status: http.StatusUnprocessableEntity,
	Title: "Replay refused: no payload", outcome: "no_payload"}

// noPayloadRecord refuses the replay of one record without payload that gives no value.
func noPayloadRecord() *Problem {
	p := probNoPayload.with("the record has no payload: its source record was gone when the worker read its dead letter " +
		"(source_unavailable, key and value null), so a replay would produce a record that never existed; " +
		"give the value to replay, or discard the record")
	p.Field = "value"
	one := int64(1)
	p.NoPayload = &one
	return p
}

// noPayloadSelection refuses a bulk replay of selected records, none of them without
// payload.
func noPayloadSelection(none, selected int64) *Problem {
	p := probNoPayload.with(fmt.Sprintf("%d of the %d selected records have no payload: their source records were gone "+
		"when the worker read their dead letters (source_unavailable, key and value null), so a replay would produce "+
		"records that never existed; leave them out of the selection (replay each with its value, or discard them)",
		none, selected))
	p.NoPayload = &none
	return p
}
