package headers

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type foreign struct {
	Key   string
	Value []byte
}

func TestConvertKeepsNilAndOrder(t *testing.T) {
	in := []foreign{{"a", nil}, {"a", []byte{}}, {"b", []byte{0xff}}}
	ours := From(in)
	require.Equal(t, []Header{{"a", nil}, {"a", []byte{}}, {"b", []byte{0xff}}}, ours)
	require.Nil(t, ours[0].Value)
	require.Equal(t, in, To[foreign](ours))
}
