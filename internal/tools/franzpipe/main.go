// Command franzpipe is the strongest Go baseline of the dlq-worker benchmark: the same
// move as rawpipe on franz-go, a pure-Go client that fetches in batches and produces
// asynchronously (internal/prototype/franzredrive). It joins a consumer group on one
// topic and, once its partitions are assigned, reads each from its low to its high
// watermark of that moment, produces every record (acks=all, idempotent), waits for every
// acknowledgement, commits and exits. With -to it produces each record as it is to the
// same partition of that topic; without, it redrives each to its original topic and
// partition with the next hop's headers, as the worker does. It prints one JSON line, as
// rawpipe does: how long that took from the assignment to the commit, how many records it
// moved and its peak resident memory. It is a benchmark tool only: no product binary links
// franz-go.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dlqops/dlq/internal/headers"
	"github.com/dlqops/dlq/internal/procstat"
	"github.com/dlqops/dlq/internal/prototype/franzredrive"
)

// result is what franzpipe prints.
type result struct {
	ElapsedMs float64 `json:"elapsed_ms"`
	Records   int64   `json:"records"`
	PeakMiB   float64 `json:"peak_mib"`
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:59092", "Kafka bootstrap servers")
	group := flag.String("group", "", "consumer group")
	from := flag.String("from", "", "topic to read")
	to := flag.String("to", "", "topic to produce to, partition for partition (empty: redrive each record to its original topic)")
	flag.Parse()
	res, err := franzredrive.Drain(context.Background(), franzredrive.Options{Seeds: strings.Split(*bootstrap, ","),
		Group: *group, DLQ: *from, To: *to, Encode: headers.DefaultEncodeOptions()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzpipe:", err)
		os.Exit(1)
	}
	peak, err := procstat.PeakRSSMiB(os.Getpid())
	if err != nil {
		fmt.Fprintln(os.Stderr, "franzpipe:", err)
		os.Exit(1)
	}
	out := result{ElapsedMs: float64(res.Elapsed.Microseconds()) / 1000, Records: res.Records, PeakMiB: peak}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Exit(1)
	}
}
