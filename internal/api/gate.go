package api

import (
	"context"
	"sync"
)

// fairGate bounds the requests that use the database at once, server-wide, below the
// pool's size: however many tokens send expensive scans, the pool keeps connections for
// everyone else. When a place frees, it goes to the waiting caller that holds the fewest,
// the longest waiting first among equals, so that no set of callers starves the rest.
type fairGate struct {
	mu      sync.Mutex
	limit   int
	total   int
	held    map[string]int
	waiting []*gateWaiter
}

type gateWaiter struct {
	caller  string
	granted chan struct{}
}

func newFairGate(limit int) *fairGate {
	return &fairGate{limit: limit, held: map[string]int{}}
}

// enter takes a place for caller, waiting while the gate is full; it fails only when ctx
// ends first.
func (g *fairGate) enter(ctx context.Context, caller string) error {
	g.mu.Lock()
	if g.total < g.limit && len(g.waiting) == 0 {
		g.takeLocked(caller)
		g.mu.Unlock()
		return nil
	}
	w := &gateWaiter{caller: caller, granted: make(chan struct{})}
	g.waiting = append(g.waiting, w)
	g.mu.Unlock()
	select {
	case <-w.granted:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-w.granted: // granted meanwhile: hand the place on
			g.leaveLocked(caller)
		default:
			for i, o := range g.waiting {
				if o == w {
					g.waiting = append(g.waiting[:i], g.waiting[i+1:]...)
					break
				}
			}
		}
		return ctx.Err()
	}
}

// leave gives caller's place back.
func (g *fairGate) leave(caller string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.leaveLocked(caller)
}

func (g *fairGate) takeLocked(caller string) {
	g.total++
	g.held[caller]++
}

func (g *fairGate) leaveLocked(caller string) {
	g.total--
	if g.held[caller]--; g.held[caller] <= 0 {
		delete(g.held, caller)
	}
	for g.total < g.limit && len(g.waiting) > 0 {
		next := 0
		for i, w := range g.waiting {
			if g.held[w.caller] < g.held[g.waiting[next].caller] {
				next = i
			}
		}
		w := g.waiting[next]
		g.waiting = append(g.waiting[:next], g.waiting[next+1:]...)
		g.takeLocked(w.caller)
		close(w.granted)
	}
}
