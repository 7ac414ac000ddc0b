package main

// The package drawing of docs/architecture.md is generated from the imports go list reports.
//go:generate go run . -doc ../../../docs/architecture.md
