package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/dlqops/dlq/internal/api"
)

// progress shows a bulk job as it runs: on a terminal a bar redrawn in place with the
// percentage, the rate and the time left; otherwise (a log, a pipe) one plain line per
// change, which a CI log or `tee` keeps readable.
type progress struct {
	w     io.Writer
	tty   bool
	now   func() time.Time
	start time.Time
	last  string
	drawn bool
}

func newProgress(w io.Writer, now func() time.Time) *progress {
	f, ok := w.(*os.File)
	return &progress{w: w, tty: ok && isatty.IsTerminal(f.Fd()), now: now, start: now()}
}

// update is WaitJob's callback.
func (p *progress) update(j api.Job) {
	line := p.line(j, p.now().Sub(p.start))
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

// done ends the bar's line on a terminal.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

const barWidth = 30

// line is the job's state after elapsed: the bar on a terminal, plain text otherwise.
func (p *progress) line(j api.Job, elapsed time.Duration) string {
	handled := j.Done + j.Failed + j.Skipped
	var rate string
	eta := "-"
	if secs := elapsed.Seconds(); secs > 0 && handled > 0 {
		r := float64(handled) / secs
		rate = fmt.Sprintf("%.0f/s", r)
		if j.Total > handled {
			eta = (time.Duration(float64(j.Total-handled)/r) * time.Second).Round(time.Second).String()
		} else {
			eta = "0s"
		}
	} else {
		rate = "-/s"
	}
	pct := 100.0
	if j.Total > 0 {
		pct = 100 * float64(handled) / float64(j.Total)
	}
	if !p.tty {
		return fmt.Sprintf("job %d %s: %d/%d (%.1f%%) done, %d failed, %d skipped, %s, ETA %s%s", j.ID, j.Status, j.Done, j.Total, pct, j.Failed, j.Skipped, rate, eta, inFlightAtCancel(j))
	}
	fill := int(pct / 100 * barWidth)
	bar := strings.Repeat("█", fill) + strings.Repeat("░", barWidth-fill)
	return fmt.Sprintf("job %d %-9s %s %5.1f%% %d/%d failed %d skipped %d %s ETA %s%s", j.ID, j.Status, bar, pct, handled, j.Total, j.Failed, j.Skipped, rate, eta, inFlightAtCancel(j))
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
