package api

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/dlqops/dlq/internal/store"
)

// A record listing's query is read without the store: bad input is a problem naming the
// parameter, and a good one becomes the store's filter. TestListRejects checks the same
// answers through the API on the real stack.
func TestListingQuery(t *testing.T) {
	for q, field := range map[string]string{
		"limit=1000000":         "limit",
		"limit=0":               "limit",
		"limit=ten":             "limit",
		"colour=red":            "colour",
		"status=lost":           "status",
		"key_b64=%25%25":        "key_b64",
		"key=a&key_b64=YQ==":    "key_b64",
		"key=":                  "key",
		"key_b64=":              "key_b64",
		"stored_from=last+week": "stored_from",
		"stored_to=tomorrow":    "stored_to",
		"reason=exhaust":        "reason",
		"limit=1&limit=2":       "limit",
		"error_class=a%00b":     "error_class",
		"route=%ff":             "route",
	} {
		_, _, _, err := listingQuery(httptest.NewRequest("GET", "/v1/records?"+q, nil), time.Now())
		var p *Problem
		require.True(t, errors.As(err, &p), "%s: %v", q, err)
		require.Equal(t, field, p.Field, q)
		require.Equal(t, 400, p.Status, q)
	}

	f, cursor, limit, err := listingQuery(httptest.NewRequest("GET", "/v1/records", nil), time.Now())
	require.NoError(t, err)
	require.Equal(t, store.Filter{}, f)
	require.Empty(t, cursor)
	require.Equal(t, defaultLimit, limit)

	f, cursor, limit, err = listingQuery(httptest.NewRequest("GET", "/v1/records?status=parked,+replayed&reason=exhausted"+
		"&original_topic=orders&error_class=%27+OR+1%3D1+--&key_b64=%2FwAB&stored_from=2026-03-01T12:00:00Z&cursor=abc&limit=500", nil), time.Now())
	require.NoError(t, err)
	require.Equal(t, store.Filter{Statuses: []store.Status{store.StatusParked, store.StatusReplayed},
		Reasons: []store.Reason{store.ReasonExhausted}, OriginalTopic: "orders", ErrorClass: "' OR 1=1 --",
		Key: []byte{0xff, 0x00, 0x01}, StoredFrom: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}, f)
	require.Equal(t, "abc", cursor)
	require.Equal(t, MaxLimit, limit)

	f, _, _, err = listingQuery(httptest.NewRequest("GET", "/v1/records?key=user", nil), time.Now())
	require.NoError(t, err)
	require.Equal(t, []byte("user"), f.Key, "the text field means the text, though it is valid base64 too")
}
