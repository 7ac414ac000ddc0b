package store

// The fixed statements live in queries/ and are generated into dbsqlc (sqlc.yaml).
//go:generate go run github.com/sqlc-dev/sqlc/cmd/sqlc@v1.31.1 generate
