// Package oapi is the dlq-admin API's client, generated from api/openapi.yaml into
// client.gen.go: it builds each operation's request (path, parameters, headers, body) with
// internal/api's types, generated from the same contract. internal/adminclient wraps it.
package oapi

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../../../api/openapi.yaml
