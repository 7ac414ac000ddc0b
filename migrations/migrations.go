// Package migrations holds the PostgreSQL schema as goose SQL migrations, embedded so
// that the binaries carry them. internal/store applies them.
package migrations

import "embed"

// FS holds every migration, named NNNNN_description.sql.
//
//go:embed *.sql
var FS embed.FS
