package store

// Internals the benchmarks use to build their raw baselines from exactly what the store
// writes and reads.
var (
	InsertColumns  = insertColumns
	InsertRow      = insertRow
	EncodeCursor   = encodeCursor
	SQLListRecords = sqlListRecords
	RecordColumns  = recordColumns
)
