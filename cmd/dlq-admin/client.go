package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dlqops/dlq/internal/adminclient"
	"github.com/dlqops/dlq/internal/api"
	"github.com/dlqops/dlq/internal/auth"
	"github.com/dlqops/dlq/internal/reltime"
	"github.com/dlqops/dlq/internal/store"
)

// clientFlags are the connection and output flags of every API subcommand.
type clientFlags struct {
	url, token, output string
	http               *http.Client // nil: the default; tests validate responses
}

func (f *clientFlags) client() (*adminclient.Client, error) {
	if f.token == "" {
		// Read here, not as the flag's default, so that --help never prints it.
		f.token = os.Getenv("DLQ_ADMIN_TOKEN")
	}
	if f.token == "" {
		return nil, errors.New("no token: give --token or set DLQ_ADMIN_TOKEN")
	}
	if f.output != "table" && f.output != "json" {
		return nil, fmt.Errorf("--output: %q is not table or json", f.output)
	}
	return adminclient.New(f.url, f.token, f.http), nil
}

// clientForID is client plus the record or job id of the command line.
func (f *clientFlags) clientForID(arg string) (*adminclient.Client, int64, error) {
	id, err := parseID(arg)
	if err != nil {
		return nil, 0, err
	}
	c, err := f.client()
	return c, id, err
}

// print writes v as JSON, or calls table.
func (f *clientFlags) print(w io.Writer, v any, table func(*tabwriter.Writer)) error {
	if f.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// filterFlags select records, for list and bulk.
type filterFlags struct {
	statuses, reasons                                                      []string
	dlqTopic, originalTopic, errorClass, errorContains, route, key, keyB64 string
	fingerprint                                                            string
	// storedFrom and storedTo are as typed (reltime): resolved when the command runs.
	storedFrom, storedTo string
	// The content searches: bytes the value, key or a header's value holds.
	valueContains, valueContainsB64, keyContains, header, headerValueContains string
}

func (ff *filterFlags) add(cmd *cobra.Command, f *clientFlags) {
	fl := cmd.Flags()
	defer func() {
		_ = cmd.RegisterFlagCompletionFunc("status", completeWords(store.Statuses))
		_ = cmd.RegisterFlagCompletionFunc("park-reason", completeWords(store.Reasons))
		_ = cmd.RegisterFlagCompletionFunc("route", f.completeRoutes)
	}()
	fl.StringSliceVar(&ff.statuses, "status", nil, "statuses (parked, scheduled, replaying, replayed, discarded, redriven)")
	fl.StringSliceVar(&ff.reasons, "park-reason", nil, "why records were parked or scheduled (exhausted, not_retryable, unroutable, backoff, ...)")
	fl.StringVar(&ff.dlqTopic, "dlq-topic", "", "DLQ topic")
	fl.StringVar(&ff.originalTopic, "original-topic", "", "original topic")
	fl.StringVar(&ff.errorClass, "error-class", "", "error class")
	fl.StringVar(&ff.errorContains, "error-contains", "", "error message contains (case-insensitive)")
	fl.StringVar(&ff.route, "route", "", "route")
	fl.StringVar(&ff.fingerprint, "fingerprint", "", "the records of one incident (dlq-admin incidents)")
	fl.StringVar(&ff.key, "key", "", "exact key, as text")
	fl.StringVar(&ff.keyB64, "key-b64", "", "exact key bytes, in standard base64 (for a key that is not text)")
	fl.StringVar(&ff.storedFrom, "stored-from", "", "records stored at or after: "+reltime.Syntax)
	fl.StringVar(&ff.storedTo, "stored-to", "", "records stored before: "+reltime.Syntax)
	fl.StringVar(&ff.valueContains, "value-contains", "", "value holds this text's bytes (case-sensitive; binary values too)")
	fl.StringVar(&ff.valueContainsB64, "value-contains-b64", "", "value holds these bytes, in standard base64")
	fl.StringVar(&ff.keyContains, "key-contains", "", "key holds this text's bytes (case-sensitive)")
	fl.StringVar(&ff.header, "header", "", "has a header of this exact name")
	fl.StringVar(&ff.headerValueContains, "header-value-contains", "", "with --header: that header's value holds this text's bytes")
	cmd.MarkFlagsMutuallyExclusive("key", "key-b64")
	cmd.MarkFlagsMutuallyExclusive("value-contains", "value-contains-b64")
	// The API's bulk body spells the lists in the plural: either spelling selects the same.
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		switch name {
		case "statuses":
			name = "status"
		case "park-reasons":
			name = "park-reason"
		}
		return pflag.NormalizedName(name)
	})
}

// storedTimes resolves --stored-from and --stored-to against now.
func (ff *filterFlags) storedTimes(now time.Time) (from, to *string, err error) {
	from, err1 := flagTime("stored-from", ff.storedFrom, now)
	to, err2 := flagTime("stored-to", ff.storedTo, now)
	return from, to, errors.Join(err1, err2)
}

func (ff *filterFlags) params(now time.Time) (api.ListRecordsParams, error) {
	set := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	from, to, err := ff.storedTimes(now)
	return api.ListRecordsParams{Status: set(strings.Join(ff.statuses, ",")), Reason: set(strings.Join(ff.reasons, ",")),
		DLQTopic: set(ff.dlqTopic), OriginalTopic: set(ff.originalTopic), ErrorClass: set(ff.errorClass),
		ErrorContains: set(ff.errorContains), Fingerprint: set(ff.fingerprint), Route: set(ff.route),
		Key: set(ff.key), KeyB64: set(ff.keyB64), StoredFrom: from, StoredTo: to,
		ValueContains: set(ff.valueContains), ValueContainsB64: set(ff.valueContainsB64), KeyContains: set(ff.keyContains),
		Header: set(ff.header), HeaderValueContains: set(ff.headerValueContains)}, err
}

func (ff *filterFlags) filter(now time.Time) (*api.Filter, error) {
	set := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	f := &api.Filter{DLQTopic: ff.dlqTopic, OriginalTopic: ff.originalTopic, ErrorClass: ff.errorClass,
		ErrorContains: ff.errorContains, Fingerprint: ff.fingerprint, Route: ff.route,
		ValueContains: set(ff.valueContains), ValueContainsB64: set(ff.valueContainsB64), KeyContains: set(ff.keyContains),
		Header: ff.header, HeaderValueContains: set(ff.headerValueContains)}
	for _, s := range ff.statuses {
		f.Statuses = append(f.Statuses, store.Status(s))
	}
	for _, r := range ff.reasons {
		f.Reasons = append(f.Reasons, store.Reason(r))
	}
	if ff.key != "" {
		f.Key = &ff.key
	}
	if ff.keyB64 != "" {
		f.KeyB64 = &ff.keyB64
	}
	from, to, err := ff.storedTimes(now)
	for _, t := range []struct {
		in  *string
		out **time.Time
	}{{from, &f.StoredFrom}, {to, &f.StoredTo}} {
		if t.in != nil {
			at, _ := time.Parse(time.RFC3339Nano, *t.in) // flagTime wrote it
			*t.out = &at
		}
	}
	return f, err
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parseID(s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("%q is not a record or job id", s)
	}
	return id, nil
}

// errorText is "class: message", without a dangling ": " when either is missing.
func errorText(class, msg string) string {
	switch {
	case class == "":
		return printable(msg)
	case msg == "":
		return printable(class)
	}
	return printable(class + ": " + msg)
}

// printable replaces control characters: an error message, a topic or a header name
// that a sender wrote can hold an escape sequence, which must not drive the operator's
// terminal, or a line break, which must not forge a row of the table.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// origin is topic/partition/offset as far as the headers told.
// redriveToUsage explains a replay's --redrive-to.
const redriveToUsage = "where each record goes by the consumer group that failed it: source (default), " +
	"group_topic (that group's own topic) or group_header (the topic, addressed to that group)"

func origin(o api.Origin) string {
	if o.Topic == "" {
		return "- (unknown: no original topic in the headers)"
	}
	out := printable(o.Topic)
	if o.Partition != nil {
		out += "/" + strconv.FormatInt(int64(*o.Partition), 10)
		if o.Offset != nil {
			out += "/" + strconv.FormatInt(*o.Offset, 10)
		}
	}
	return out
}

func ts(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// clientCommands are the subcommands that call a dlq-admin server.
func clientCommands(root *cobra.Command, f *clientFlags) {
	pf := root.PersistentFlags()
	pf.StringVar(&f.url, "url", envOr("DLQ_ADMIN_URL", "http://127.0.0.1:8080"), "API server (environment: DLQ_ADMIN_URL)")
	pf.StringVar(&f.token, "token", "", "bearer token (default: the environment's DLQ_ADMIN_TOKEN)")
	pf.StringVarP(&f.output, "output", "o", "table", "table or json")
	root.AddCommand(listCommand(f), showCommand(f), replayCommand(f), discardCommand(f), bulkCommand(f),
		jobsCommand(f), statsCommand(f), incidentsCommand(f), exportCommand(f), tokenCommand())
	root.AddCommand(operateCommands(f)...)
}

func listCommand(f *clientFlags) *cobra.Command {
	var ff filterFlags
	var cursor string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List records, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			q, err := ff.params(time.Now())
			if err != nil {
				return err
			}
			q.Limit = &limit
			if cursor != "" {
				q.Cursor = &cursor
			}
			page, err := c.ListRecords(cmd.Context(), q)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), page, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "ID\tSTATUS\tREASON\tORIGINAL TOPIC\tRETRIES\tERROR\tSTORED")
				for _, r := range page.Records {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Status, r.Reason, printable(r.Original.Topic),
						r.RetryCount, truncate(errorText(r.ErrorClass, r.ErrorMessage), 60), ts(&r.StoredAt))
				}
				fmt.Fprintln(w, totalLine(page.Total, page.TotalIsEstimate, "records"))
				if page.NextCursor != "" {
					fmt.Fprintf(w, "next page: --cursor %s\n", page.NextCursor)
				}
			})
		},
	}
	ff.add(cmd, f)
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next_cursor of the previous page")
	cmd.Flags().IntVar(&limit, "limit", 50, "records per page (at most 500)")
	return cmd
}

// totalLine says how many a listing's filters select over all its pages; past the API's
// exact bound it is the database's estimate, and says so.
func totalLine(n int64, estimate bool, noun string) string {
	if estimate {
		return fmt.Sprintf("matching %s: about %d (an estimate: more than %d)", noun, n, store.ExactTotalBound)
	}
	return fmt.Sprintf("matching %s: %d", noun, n)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func showCommand(f *clientFlags) *cobra.Command {
	var hexDump bool
	var out string
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one record: key, value, headers and their reading",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := f.clientForID(args[0])
			if err != nil {
				return err
			}
			d, err := c.GetRecord(cmd.Context(), id)
			if err != nil {
				return err
			}
			if out != "" {
				return writeValue(cmd, out, d)
			}
			show := preview
			if hexDump {
				show = hexBlock
			}
			return f.print(cmd.OutOrStdout(), d, func(w *tabwriter.Writer) {
				r := d.Record
				status := string(r.Status)
				if r.Reason != "" {
					status += " (" + string(r.Reason) + ")"
				}
				fmt.Fprintf(w, "id\t%d\nstatus\t%s\nroute\t%s\ndlq\t%s/%d/%d\noriginal\t%s\nretries\t%d\nerror\t%s\n",
					r.ID, status, dash(r.Route), r.DLQ.Topic, r.DLQ.Partition, r.DLQ.Offset, origin(r.Original),
					r.RetryCount, dash(errorText(r.ErrorClass, r.ErrorMessage)))
				fmt.Fprintf(w, "due\t%s\ntimestamp\t%s\nstored\t%s\nchanged\t%s by %s\n",
					ts(r.DueAt), ts(&r.Timestamp), ts(&r.StoredAt), ts(&r.ChangedAt), dash(r.ChangedBy))
				if r.Produced != nil {
					fmt.Fprintf(w, "produced\t%s/%d/%d\n", r.Produced.Topic, r.Produced.Partition, r.Produced.Offset)
				}
				if r.JobID != 0 {
					fmt.Fprintf(w, "job\t%d\n", r.JobID)
				}
				if g := d.Envelope.ConsumerGroup; g != "" {
					fmt.Fprintf(w, "failing group\t%s\n", printable(g)) // header text: kept inert
				}
				fmt.Fprintf(w, "key\t%s\n", show(d.Key))
				printDecoded(w, "key", d.KeyDecoded)
				fmt.Fprintf(w, "value\t%s\n", show(d.Value))
				printDecoded(w, "value", d.ValueDecoded)
				for _, h := range d.Headers {
					fmt.Fprintf(w, "header %s\t%s\n", printable(h.Key), show(h.Value))
				}
			})
		},
	}
	cmd.Flags().BoolVar(&hexDump, "hex", false, "show key, value and headers as hex dumps (offset, bytes, printable characters), whole")
	cmd.Flags().StringVar(&out, "out", "", "write the value's raw bytes to this file instead of showing the record")
	cmd.MarkFlagsMutuallyExclusive("hex", "out")
	return cmd
}

func preview(b api.Bytes) string {
	switch {
	case b.Null:
		return "(null)"
	case b.UTF8 != nil:
		return truncate(strconv.Quote(*b.UTF8), 200)
	}
	return "base64:" + truncate(b.Base64, 200)
}

func replayCommand(f *clientFlags) *cobra.Command {
	var req api.ReplayRequest
	var key, value, valueB64, valueJSON string
	var wait, yes bool
	var edit editFlags
	cmd := &cobra.Command{
		Use:   "replay ID",
		Short: "Replay one record (dlq-worker produces it), edited if asked: the diff is shown and confirmed first",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := f.clientForID(args[0])
			if err != nil {
				return err
			}
			switch fl := cmd.Flags(); {
			case fl.Changed("value") && fl.Changed("value-b64"):
				return errors.New("give --value or --value-b64, not both")
			case edit.value != "" && (fl.Changed("value") || fl.Changed("value-b64")):
				return errors.New("give --edit-value or --value/--value-b64, not both")
			case edit.value == "-" && !yes:
				return errors.New("--edit-value - reads the value from stdin, where the confirmation would be read: add --yes")
			case fl.Changed("value"):
				req.Value = &api.Bytes{UTF8: &value}
			case fl.Changed("value-b64"):
				req.Value = &api.Bytes{Base64: valueB64}
			}
			if edit.any() {
				rec, err := c.GetRecord(cmd.Context(), id)
				if err != nil {
					return err
				}
				if err := edit.apply(rec, &req, cmd.InOrStdin()); err != nil {
					return err
				}
				writeEditDiff(cmd.ErrOrStderr(), rec, req)
				if !yes {
					if err := confirmEdit(cmd.InOrStdin(), cmd.ErrOrStderr(), id); err != nil {
						return err
					}
				}
			}
			if cmd.Flags().Changed("value-json") {
				req.ValueJSON = json.RawMessage(valueJSON)
			}
			job, err := c.Replay(cmd.Context(), id, req, key)
			if err != nil {
				return err
			}
			if wait {
				if job, err = c.WaitJob(cmd.Context(), job.ID, 200*time.Millisecond, func(api.Job) {}); err != nil {
					return err
				}
			}
			return printJobs(f, cmd.OutOrStdout(), job)
		},
	}
	cmd.Flags().StringVar(&req.TargetTopic, "to", "", "target topic (default: the original topic; else one of replay_topics)")
	cmd.Flags().StringVar((*string)(&req.RedriveTo), "redrive-to", "", redriveToUsage)
	cmd.Flags().BoolVar(&req.ResetRetry, "reset-retry", false, "reset the retry count to 0")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "a retried command with the same key returns the same job")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until the worker has replayed it")
	cmd.Flags().StringVar(&value, "value", "", "replay with this value (UTF-8 text) instead of the stored one: "+
		"how a record without payload is replayed")
	cmd.Flags().StringVar(&valueB64, "value-b64", "", "replay with this value (standard base64) instead of the stored one")
	cmd.Flags().StringVar(&edit.value, "edit-value", "", "replay with the value of @FILE or - (stdin) instead of the stored one; "+
		"masked fields left as their placeholders are sent as stored")
	cmd.Flags().StringArrayVar(&edit.setHeaders, "edit-header", nil, "set header name=value (repeatable)")
	cmd.Flags().StringArrayVar(&edit.dropHeaders, "drop-header", nil, "leave header name out (repeatable)")
	cmd.Flags().BoolVar(&yes, "yes", false, "replay an edit without asking to confirm its diff")
	cmd.Flags().StringVar(&valueJSON, "value-json", "", "replay with this value as JSON (the shape `show -o json` gives in "+
		"value_decoded.json), encoded with the record's Schema Registry schema")
	return cmd
}

func discardCommand(f *clientFlags) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "discard ID",
		Short: "Discard one parked or scheduled record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, id, err := f.clientForID(args[0])
			if err != nil {
				return err
			}
			r, err := c.Discard(cmd.Context(), id, reason)
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), r, func(w *tabwriter.Writer) {
				fmt.Fprintf(w, "record %d %s by %s\n", r.ID, r.Status, r.ChangedBy)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; kept in the audit log)")
	return cmd
}

func bulkCommand(f *clientFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "bulk", Short: "Replay or discard records by ids or by filter, as a job with progress"}
	for _, kind := range []store.JobKind{store.JobReplay, store.JobDiscard} {
		var ff filterFlags
		var req api.BulkRequest
		var yes, detach bool
		sub := &cobra.Command{
			Use:   string(kind),
			Short: "Bulk " + string(kind) + ": a dry run prints the count; --yes confirms it and runs the job",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := f.client()
				if err != nil {
					return err
				}
				if req.IDs == nil {
					if req.Filter, err = ff.filter(time.Now()); err != nil {
						return err
					}
				}
				ctx, out := cmd.Context(), cmd.OutOrStdout()
				dry, err := c.BulkDryRun(ctx, kind, req)
				if err != nil {
					return err
				}
				if !yes {
					fmt.Fprintf(out, "%d records selected (dry run); run again with --yes to %s them\n", dry.Count, kind)
					if dry.NoPayload > 0 {
						fmt.Fprintf(out, "%d of them have no payload (share-group dead letters whose source record was gone: "+
							"key and value null): a replay refuses them; leave them out, or replay each with its value\n", dry.NoPayload)
					}
					return nil
				}
				req.ConfirmCount = &dry.Count
				job, err := c.Bulk(ctx, kind, req, "")
				if err != nil {
					return err
				}
				if !detach {
					p := newProgress(cmd.ErrOrStderr(), time.Now)
					job, err = c.WaitJob(ctx, job.ID, 500*time.Millisecond, p.update)
					p.done()
					if err != nil {
						return err
					}
				}
				return printJobs(f, out, job)
			},
		}
		ff.add(sub, f)
		fl := sub.Flags()
		fl.Int64SliceVar(&req.IDs, "ids", nil, "record ids (instead of a filter)")
		fl.BoolVar(&yes, "yes", false, "confirm the dry run's count and run the job")
		fl.BoolVar(&detach, "detach", false, "do not wait for the job")
		if kind == store.JobReplay {
			fl.StringVar(&req.TargetTopic, "to", "", "target topic (default: each record's original topic)")
			fl.StringVar((*string)(&req.RedriveTo), "redrive-to", "", redriveToUsage)
			fl.BoolVar(&req.ResetRetry, "reset-retry", false, "reset retry counts to 0")
			fl.IntVar(&req.RatePerSecond, "rate", 0, "records per second (0: unlimited)")
		} else {
			fl.StringVar(&req.Reason, "reason", "", "why (required)")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

func printJobs(f *clientFlags, w io.Writer, jobs ...api.Job) error {
	var v any = jobs
	if len(jobs) == 1 {
		v = jobs[0]
	}
	return f.print(w, v, func(tw *tabwriter.Writer) {
		fmt.Fprintln(tw, "JOB\tKIND\tSTATUS\tDONE\tFAILED\tSKIPPED\tTOTAL\tBY\tCREATED\tERROR")
		for _, j := range jobs {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", j.ID, j.Kind, j.Status, j.Done, j.Failed, j.Skipped, j.Total,
				j.CreatedBy, ts(&j.CreatedAt), truncate(j.Error, 80))
		}
	})
}

func jobsCommand(f *clientFlags) *cobra.Command {
	var limit int
	var before int64
	cmd := &cobra.Command{
		Use:   "jobs [show ID | cancel ID]",
		Short: "List jobs, show one, or cancel one",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			list, err := c.ListJobs(cmd.Context(), before, limit)
			if err != nil {
				return err
			}
			if f.output == "json" {
				return f.print(cmd.OutOrStdout(), list, nil)
			}
			return printJobs(f, cmd.OutOrStdout(), list.Jobs...)
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "jobs per page")
	cmd.Flags().Int64Var(&before, "before", 0, "list jobs below this id")
	for name, call := range map[string]func(*adminclient.Client, *cobra.Command, int64) (api.Job, error){
		"show": func(c *adminclient.Client, cmd *cobra.Command, id int64) (api.Job, error) {
			return c.GetJob(cmd.Context(), id)
		},
		"cancel": func(c *adminclient.Client, cmd *cobra.Command, id int64) (api.Job, error) {
			return c.CancelJob(cmd.Context(), id)
		},
	} {
		cmd.AddCommand(&cobra.Command{
			Use:   name + " ID",
			Short: name + " one job",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, id, err := f.clientForID(args[0])
				if err != nil {
					return err
				}
				job, err := call(c, cmd, id)
				if err != nil {
					return err
				}
				return printJobs(f, cmd.OutOrStdout(), job)
			},
		})
	}
	return cmd
}

func statsCommand(f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "stats",
		Short: "Record counts by topic, reason and status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.client()
			if err != nil {
				return err
			}
			st, err := c.Stats(cmd.Context())
			if err != nil {
				return err
			}
			return f.print(cmd.OutOrStdout(), st, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "DLQ TOPIC\tORIGINAL TOPIC\tREASON\tSTATUS\tCOUNT")
				for _, s := range st.Counts {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\n", s.DLQTopic, s.OriginalTopic, s.Reason, s.Status, s.Count)
				}
				fmt.Fprintf(w, "oldest parked\t%s\n", ts(st.OldestParked))
			})
		},
	}
}

func tokenCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Make API tokens and the hashes the configuration keeps"}
	cmd.AddCommand(&cobra.Command{
		Use:   "new",
		Short: "Print a new random token and its sha256 for the tokens list",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			t := auth.NewToken()
			fmt.Fprintf(cmd.OutOrStdout(), "token:  %s\nsha256: %s\n", t, auth.Hash(t))
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "hash",
		Short: "Print the sha256 of a token read from standard input",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 4096))
			if err != nil {
				return err
			}
			t := strings.TrimSpace(string(raw))
			if t == "" {
				return errors.New("no token on standard input")
			}
			if err := auth.CheckStrength(t); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), auth.Hash(t))
			return nil
		},
	})
	return cmd
}
