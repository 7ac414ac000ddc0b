package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// setMemory sets the Go garbage collector from memory_limit_mib: the heap may grow to
// limitMiB and is collected when it nears it, not each time it doubles (GOGC off, the
// budget as the soft memory limit). The worker's garbage is mostly the records it has
// moved, and what it keeps is bounded by the records in flight. Collecting at a fixed
// budget makes far fewer collections than collecting at twice a small live heap, and the
// heap reaches the same plateau in every run longer than a few seconds, so peak RSS (the
// budget plus librdkafka's buffers) does not grow with the backlog. When more is live than
// three quarters of the budget (large records, a high max_in_flight) the limit follows at
// twice the live heap after each collection, as GOGC=100 would, so that the collector
// never runs back to back. Below that, at least a quarter of the budget is left between
// collections, and bursts of records in flight leave the limit alone: following them
// would let the heap grow past the budget, a peak the longer the run, the likelier to
// reach. GOGC and GOMEMLIMIT in the environment win: with either set, nothing follows.
// The worker follows until it exits; stop ends the following (tests).
func setMemory(limitMiB int64) (stop func()) {
	gcPercent, limit := memorySettings(limitMiB, os.LookupEnv)
	if gcPercent != nil {
		debug.SetGCPercent(*gcPercent)
	}
	if limit != nil {
		debug.SetMemoryLimit(*limit)
	}
	if gcPercent != nil && limit != nil {
		return followLiveHeap(*limit)
	}
	return func() {}
}

// memorySettings is what setMemory sets: nil leaves the runtime's own setting (the
// environment's) alone.
func memorySettings(limitMiB int64, lookupEnv func(string) (string, bool)) (gcPercent *int, limit *int64) {
	if _, set := lookupEnv("GOGC"); !set {
		gcPercent = new(-1) // off: only the limit triggers a collection
	}
	if _, set := lookupEnv("GOMEMLIMIT"); !set {
		limit = new(limitMiB << 20)
	}
	return gcPercent, limit
}

// limitFor is the memory limit after a collection that left live bytes live: the budget,
// or twice the live heap once more than three quarters of the budget is live.
func limitFor(budget, live int64) int64 {
	if live <= budget/4*3 {
		return budget
	}
	return max(budget, 2*live)
}

// followLiveHeap sets the limit to limitFor(budget, live heap) after every collection
// until stop is called. It runs on the runtime's finalizer goroutine: a sentinel's
// finalizer runs after the collection that finds it unreachable and sets a new sentinel.
func followLiveHeap(budget int64) (stop func()) {
	var stopped atomic.Bool
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var arm func()
	arm = func() {
		// 32 bytes: the tiny allocator shares blocks below 16, whose finalizers may not run.
		runtime.SetFinalizer(new([32]byte), func(*[32]byte) {
			if stopped.Load() {
				return
			}
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				debug.SetMemoryLimit(limitFor(budget, int64(sample[0].Value.Uint64())))
			}
			arm()
		})
	}
	arm()
	return func() { stopped.Store(true) }
}
