package main

import (
	"slices"
	"testing"
)

func TestCount(t *testing.T) {
	types, err := Count("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	want := []Type{
		{Dir: "big", Package: "big", Name: "large", Methods: 31},
		{Dir: "big", Package: "big", Name: "edge", Methods: 30},
		{Dir: "big", Package: "big", Name: "generic", Methods: 3},
		{Dir: "big", Package: "big_test", Name: "large", Methods: 1},
	}
	if !slices.Equal(types, want) {
		t.Fatalf("Count = %+v, want %+v (a generated file's methods, a nested module and testdata are not counted; promoted methods are not declared)", types, want)
	}
}

// TestOver fails the fixture on the one type above the limit, naming it and its count,
// and passes the type at the limit.
func TestOver(t *testing.T) {
	types, err := Count("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	got := Over(types, limit)
	want := []string{"big.large (big): 31 methods, more than 30: split it by concern into parts with their own types"}
	if !slices.Equal(got, want) {
		t.Fatalf("Over = %q, want %q", got, want)
	}
}
