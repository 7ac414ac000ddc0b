package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/dlqops/dlq/internal/api"
)

// progress shows a bulk job as it runs: on a terminal a bar redrawn in place with the
// percentage, the rate and the time left; otherwise (a log, a pipe) one plain line per
// change, which a CI log or `tee` keeps readable. Until the job has counted its records
// the bar is empty and says so; the rate is that of the last rateWindow, so that it
// follows a job whose speed changes (a --rate limit, a slow target), and the time left is
// never 0s while records are left.
type progress struct {
	w      io.Writer
	tty    bool
	now    func() time.Time
	window []sample
	last   string
	drawn  bool
}

// sample is how many records a job had handled at a time.
type sample struct {
	at      time.Time
	handled int64
}

// rateWindow is how far back the rate looks.
const rateWindow = 10 * time.Second

func newProgress(w io.Writer, now func() time.Time) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && isatty.IsTerminal(f.Fd()), now: now}
}

// update is WaitJob's callback.
func (p *progress) update(j api.Job) {
	p.observe(p.now(), j.Done+j.Failed+j.Skipped)
	line := p.line(j)
	if line == p.last {
		return
	}
	p.last = line
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", line) // back to the line's start, clear it, redraw
		p.drawn = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// observe adds a sample and forgets those older than the window, keeping one at or before
// its start so that the rate spans the whole window.
func (p *progress) observe(at time.Time, handled int64) {
	p.window = append(p.window, sample{at, handled})
	for len(p.window) > 2 && !p.window[1].at.After(at.Add(-rateWindow)) {
		p.window = p.window[1:]
	}
}

// rate is records per second over the window; false until two samples span some time.
func (p *progress) rate() (float64, bool) {
	if len(p.window) < 2 {
		return 0, false
	}
	first, last := p.window[0], p.window[len(p.window)-1]
	secs := last.at.Sub(first.at).Seconds()
	if secs <= 0 {
		return 0, false
	}
	return float64(last.handled-first.handled) / secs, true
}

// done ends the bar's line on a terminal.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

const barWidth = 30

// eighths are the partial cells of the bar, so that it moves by an eighth of a cell.
var eighths = []string{"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"}

// line is the job's state: the bar on a terminal, plain text otherwise.
func (p *progress) line(j api.Job) string {
	handled := j.Done + j.Failed + j.Skipped
	rate, eta := "-/s", "-"
	r, measured := p.rate()
	if measured {
		rate = fmt.Sprintf("%.0f/s", r)
	}
	left := j.Total - handled
	switch {
	case j.Total > 0 && left <= 0:
		eta = "0s"
	case j.Total > 0 && measured && r > 0:
		eta = (time.Duration(math.Ceil(float64(left)/r)) * time.Second).String()
	}
	pct := "counting"
	if j.Total > 0 {
		pct = fmt.Sprintf("%.1f%%", 100*float64(handled)/float64(j.Total))
	}
	if !p.tty {
		return fmt.Sprintf("job %d %s: %d/%d (%s) done, %d failed, %d skipped, %s, ETA %s%s", j.ID, j.Status, j.Done, j.Total, pct, j.Failed, j.Skipped, rate, eta, inFlightAtCancel(j))
	}
	return fmt.Sprintf("job %d %-9s %s %6s %d/%d failed %d skipped %d %s ETA %s%s", j.ID, j.Status, bar(handled, j.Total), pct, handled, j.Total, j.Failed, j.Skipped, rate, eta, inFlightAtCancel(j))
}

// bar draws handled of total in barWidth cells, empty while the total is not known.
func bar(handled, total int64) string {
	var e int64 // eighths of a cell filled
	if total > 0 {
		e = min(handled, total) * barWidth * 8 / total
	}
	full, part := int(e/8), int(e%8)
	out := strings.Repeat("█", full) + eighths[part]
	if part > 0 {
		full++
	}
	return out + strings.Repeat("░", barWidth-full)
}

// inFlightAtCancel says how many records a cancelled job still had in the producer, so
// that an operator does not take done for all that reached the target before the cancel
// and replay the rest twice.
func inFlightAtCancel(j api.Job) string {
	if j.InFlightAtCancel == nil {
		return ""
	}
	return fmt.Sprintf(" (%d in flight at the cancel, counted in done once they reached the target)", *j.InFlightAtCancel)
}
