package config

// The configuration reference (docs/configuration.md) is generated from these structs:
// their yaml tags, WithDefaults and doc comments.
//go:generate go run ../tools/configdoc -doc ../../docs/configuration.md
