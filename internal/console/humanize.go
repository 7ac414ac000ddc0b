package console

import (
	"fmt"
	"html/template"
	"strconv"
	"time"
)

// How the console writes times and counts for a person reading a page at 3 a.m.: a
// recent time as "3 min ago" (the exact UTC time in its title and datetime), a count with
// thousands separators.

// exactLayout is how a time reads in full: UTC, to the second.
const exactLayout = "2006-01-02 15:04:05Z"

// relativeSpan is how far from now a time still reads relatively; beyond it, the date
// says more than "23 days ago".
const relativeSpan = 7 * 24 * time.Hour

// timeOf unwraps the time values the API types hold; ok is false for none.
func timeOf(v any) (time.Time, bool) {
	switch t := v.(type) {
	case time.Time:
		return t, !t.IsZero()
	case *time.Time:
		if t == nil || t.IsZero() {
			return time.Time{}, false
		}
		return *t, true
	}
	return time.Time{}, false
}

// exact is a time in full, "—" for none: for attributes and the text of SVG titles.
func exact(v any) string {
	t, ok := timeOf(v)
	if !ok {
		return "—"
	}
	return t.UTC().Format(exactLayout)
}

// relative says how long before or after now t is, in the largest whole unit.
func relative(now, t time.Time) string {
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	if d > relativeSpan {
		return t.UTC().Format(exactLayout)
	}
	var span string
	switch {
	case d < 45*time.Second:
		return "just now"
	case d < 90*time.Minute:
		span = fmt.Sprintf("%d min", max(1, int((d+30*time.Second)/time.Minute)))
	case d < 36*time.Hour:
		span = fmt.Sprintf("%d h", int((d+30*time.Minute)/time.Hour))
	default:
		span = fmt.Sprintf("%d days", int((d+12*time.Hour)/(24*time.Hour)))
	}
	if future {
		return "in " + span
	}
	return span + " ago"
}

// timeElement is a time as a <time> element reading relatively, "—" for none.
func timeElement(now func() time.Time) func(v any) template.HTML {
	return func(v any) template.HTML {
		t, ok := timeOf(v)
		if !ok {
			return "—"
		}
		full := t.UTC().Format(exactLayout)
		return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339Nano) + `" title="` + full + `">` +
			template.HTMLEscapeString(relative(now(), t)) + `</time>`)
	}
}

// thousands writes an integer with a comma between each group of three digits.
func thousands(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint32:
		n = int64(x)
	default:
		return fmt.Sprint(v)
	}
	digits := strconv.FormatInt(n, 10)
	sign := ""
	if n < 0 {
		sign, digits = "-", digits[1:]
	}
	out := make([]byte, 0, len(digits)+len(digits)/3)
	for i := range len(digits) {
		if i > 0 && (len(digits)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, digits[i])
	}
	return sign + string(out)
}
