package console

import (
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-in throttling. Failures are counted per client address and per pair of address
// and token prefix, never per prefix alone: an attacker who sends wrong tokens from its
// own address throttles only that address, and an operator elsewhere still signs in.
const (
	signInAddrBurst = 20
	signInAddrEvery = 6 * time.Second // one more failure allowed per address this often
	signInPairBurst = 5
	signInPairEvery = 30 * time.Second
	// signInPrefixLen is how much of a presented token keys its pair: enough to tell
	// tokens apart, far too little to help guess one.
	signInPrefixLen = 8
	// maxSignInKeys bounds the table; beyond it, idle entries are dropped and, if none
	// are idle, a new address is not tracked (its failures are still audited).
	maxSignInKeys = 10000
)

// signInThrottle holds the failure budgets of recent sign-ins.
type signInThrottle struct {
	clock func() time.Time

	mu   sync.Mutex
	lims map[string]*rate.Limiter
}

func newSignInThrottle(clock func() time.Time) *signInThrottle {
	return &signInThrottle{clock: clock, lims: map[string]*rate.Limiter{}}
}

// clientAddr is the address a sign-in came from (the connection's, without its port).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func signInKeys(addr, token string) (byAddr, byPair string) {
	return "a\x00" + addr, "p\x00" + addr + "\x00" + token[:min(len(token), signInPrefixLen)]
}

// wait returns how long a sign-in from addr with token must wait, 0 when it may try now.
func (st *signInThrottle) wait(addr, token string) time.Duration {
	now := st.clock()
	byAddr, byPair := signInKeys(addr, token)
	st.mu.Lock()
	defer st.mu.Unlock()
	var d time.Duration
	for _, key := range []string{byAddr, byPair} {
		if lim := st.lims[key]; lim != nil {
			if tokens := lim.TokensAt(now); tokens < 1 {
				d = max(d, time.Duration((1-tokens)/float64(lim.Limit())*float64(time.Second)))
			}
		}
	}
	return d
}

// failed spends one failure of addr and of its pair with token.
func (st *signInThrottle) failed(addr, token string) {
	now := st.clock()
	byAddr, byPair := signInKeys(addr, token)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.spend(now, byAddr, signInAddrEvery, signInAddrBurst)
	st.spend(now, byPair, signInPairEvery, signInPairBurst)
}

func (st *signInThrottle) spend(now time.Time, key string, every time.Duration, burst int) {
	lim := st.lims[key]
	if lim == nil {
		if len(st.lims) >= maxSignInKeys {
			for k, l := range st.lims {
				if l.TokensAt(now) >= float64(l.Burst()) {
					delete(st.lims, k)
				}
			}
			if len(st.lims) >= maxSignInKeys {
				return
			}
		}
		lim = rate.NewLimiter(rate.Every(every), burst)
		st.lims[key] = lim
	}
	lim.AllowN(now, 1)
}

// retryAfter is d in whole seconds, at least one.
func retryAfter(d time.Duration) int { return max(1, int(math.Ceil(d.Seconds()))) }
