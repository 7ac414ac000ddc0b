package editdiff

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestValueDiffsIndentedJSON(t *testing.T) {
	require.Nil(t, Value([]byte(`{"a":1}`), []byte(`{"a":1}`)))
	require.Equal(t, []Line{{Kept, "{"}, {Kept, `  "a": 1,`}, {Removed, `  "name": "Ann"`}, {Added, `  "name": "Anna"`}, {Kept, "}"}},
		Value([]byte(`{"a":1,"name":"Ann"}`), []byte(`{"a": 1, "name": "Anna"}`)))
	require.Equal(t, []Line{{Removed, "base64:/wA="}, {Added, "text"}}, Value([]byte{0xff, 0}, []byte("text")))
}

func TestHeadersAddedRemovedChanged(t *testing.T) {
	before := []Header{{"trace", []byte{0xff}}, {"a", []byte("1")}, {"n", nil}}
	after := []Header{{"a", []byte("2")}, {"fixed-by", []byte("ops")}, {"n", nil}}
	require.Equal(t, []HeaderChange{
		{Op: Changed, Name: "a", Before: "1", After: "2"},
		{Op: Added, Name: "fixed-by", After: "ops"},
		{Op: Removed, Name: "trace", Before: "base64:/w=="},
	}, Headers(before, after))
}
