// Package reltime reads the times an operator types into a filter: an RFC 3339 time, or one
// relative to now ("-2h", "-30m", "-7d", "now", "today", "yesterday"), so that "what came in
// since the page went off" needs no timestamp arithmetic at 3 a.m. The API and the CLI read
// filters with this one parser.
package reltime

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Syntax says what Parse accepts, for error messages and help texts.
const Syntax = `an RFC 3339 time (2024-05-01T12:00:00Z), a time ago (-2h, -30m, -90s, -7d), now, today or yesterday (UTC midnight)`

// ErrSyntax is the error of a text that is no time Parse reads.
var ErrSyntax = errors.New("must be " + Syntax)

// Parse reads s against now. Days are 24 hours; today and yesterday are midnights in UTC,
// one meaning wherever the operator's terminal or browser is.
func Parse(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	midnight := now.UTC().Truncate(24 * time.Hour)
	switch strings.ToLower(s) {
	case "now":
		return now, nil
	case "today":
		return midnight, nil
	case "yesterday":
		return midnight.Add(-24 * time.Hour), nil
	}
	if strings.HasPrefix(s, "-") {
		ago, err := agoDuration(s[1:])
		if err != nil {
			return time.Time{}, ErrSyntax
		}
		return now.Add(-ago), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, ErrSyntax
	}
	return t, nil
}

// maxAgo bounds a relative time well inside time.Duration.
const maxAgo = 100 * 365 * 24 * time.Hour

// agoDuration reads a Go duration ("2h30m") or a number of days ("7d"), positive.
func agoDuration(s string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, err
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, err
		}
	}
	if d <= 0 || d > maxAgo || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		return 0, ErrSyntax
	}
	return d, nil
}
