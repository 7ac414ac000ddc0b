package routes

import (
	"fmt"
	"strconv"
	"strings"
)

// cronField is one field of a cron spec and its range.
type cronField struct {
	name     string
	min, max int
}

var (
	secondsField = cronField{"seconds", 0, 59}
	cronFields   = []cronField{{"minutes", 0, 59}, {"hours", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 6}}
)

// checkSteps refuses a step larger than its field's range (`*/70` in seconds), which the
// cron parser accepts although it can only ever match the range's start: the schedule
// would run far less often than it reads.
func checkSteps(spec string) error {
	fs := strings.Fields(spec)
	if len(fs) > 0 && (strings.HasPrefix(fs[0], "TZ=") || strings.HasPrefix(fs[0], "CRON_TZ=")) {
		fs = fs[1:]
	}
	if len(fs) == 0 || strings.HasPrefix(fs[0], "@") {
		return nil
	}
	fields := cronFields
	if len(fs) == 6 {
		fields = append([]cronField{secondsField}, cronFields...)
	}
	for i, f := range fields {
		if i >= len(fs) {
			break
		}
		for _, part := range strings.Split(fs[i], ",") {
			rng, stepText, ok := strings.Cut(part, "/")
			if !ok {
				continue
			}
			step, err := strconv.Atoi(stepText)
			if err != nil {
				continue // the parser names it
			}
			lo, hi := f.min, f.max
			if rng != "*" && rng != "?" {
				a, b, isRange := strings.Cut(rng, "-")
				var errA, errB error
				lo, errA = strconv.Atoi(a)
				if isRange {
					hi, errB = strconv.Atoi(b)
				}
				if errA != nil || errB != nil {
					continue // names (JAN, MON): the parser checks them
				}
			}
			if step > hi-lo {
				return fmt.Errorf("%s field %q: step %d is larger than its range %d-%d, so it would only ever match %d", f.name, part, step, lo, hi, lo)
			}
		}
	}
	return nil
}
