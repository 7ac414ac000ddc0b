package routes

import "time"

// Interval is the longest gap between the next ticks of a cron schedule after now (an
// "@every" schedule's period; a weekday schedule's weekend): how long a healthy route can
// go between runs, which the "no successful run" alert multiplies.
func Interval(schedule string, now time.Time) (time.Duration, error) {
	s, err := Parser.Parse(schedule)
	if err != nil {
		return 0, err
	}
	var longest time.Duration
	t := s.Next(now)
	// Two weeks of ticks cover every weekly pattern; the cap bounds a per-second schedule.
	for i := 0; i < 10000 && t.Sub(now) <= 14*24*time.Hour; i++ {
		next := s.Next(t)
		if next.IsZero() {
			break
		}
		longest = max(longest, next.Sub(t))
		t = next
	}
	return longest, nil
}
