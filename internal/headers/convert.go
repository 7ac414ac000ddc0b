package headers

// Shape is every header type laid out like ours: confluent-kafka-go's kafka.Header and
// the store's Header, so each converts without this package importing either.
type Shape interface {
	~struct {
		Key   string
		Value []byte
	}
}

// From converts a header list of another package's type.
func From[H Shape](hs []H) []Header {
	out := make([]Header, len(hs))
	for i, h := range hs {
		out[i] = Header(h)
	}
	return out
}

// To converts a header list, ours or another package's, to another package's type.
func To[H, F Shape](hs []F) []H {
	out := make([]H, len(hs))
	for i, h := range hs {
		out[i] = H(h)
	}
	return out
}
