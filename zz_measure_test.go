package store_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/dlqops/dlq/internal/store"
	"github.com/dlqops/dlq/internal/store/storetest"
)

func TestZZMeasureListAlloc(t *testing.T) {
	ctx := context.Background()
	s := storetest.New(t)
	recs := parked("dlq.big", 0, 50)
	for i := range recs {
		recs[i].Value = make([]byte, 1<<20)
	}
	if _, err := s.StoreBatch(ctx, recs, nil); err != nil {
		t.Fatal(err)
	}
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	for range 4 {
		if _, err := s.List(ctx, store.Filter{}, "", 500); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&b)
	t.Logf("MEASURE allocated per listing of 50 x 1 MiB: %.1f MiB", float64(b.TotalAlloc-a.TotalAlloc)/4/(1<<20))
}
