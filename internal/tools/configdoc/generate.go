package main

// The configuration reference (docs/configuration.md) is generated from both binaries'
// configuration structs (cmd/dlq-worker/workerconfig, cmd/dlq-admin/adminconfig) and the
// settings of the components they assemble: their yaml tags, WithDefaults and doc comments.
//go:generate go run . -doc ../../../docs/configuration.md
