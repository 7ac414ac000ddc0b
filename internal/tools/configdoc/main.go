// Command configdoc writes the configuration reference of both binaries into
// docs/configuration.md, between its generated-section markers: one row per key with its
// type, default, environment variable and meaning. Keys and types come from the
// configuration structs' yaml tags, defaults from their WithDefaults, meanings from the
// fields' doc comments, so the reference follows the code: `go generate ./...` after adding
// a key, and `make lint` (-check) fails until then.
package main

import "github.com/dlqops/dlq/internal/tools/docsection"

func main() {
	docsection.Main("configdoc", "docs/configuration.md", Reference)
}
