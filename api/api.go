// Package api holds the admin API contract, api/openapi.yaml, for the server's tests and
// for anyone who embeds it.
package api

import _ "embed"

// OpenAPI is the contract, as YAML.
//
//go:embed openapi.yaml
var OpenAPI []byte
