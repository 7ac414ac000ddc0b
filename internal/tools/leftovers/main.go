// Command leftovers checks that a test suite left nothing behind in the stack `make dev`
// uses: no topic in the broker, and no dead-letter row of a new topic in the database's
// default schema (what `dlq-admin stats` of the dev configuration shows). `make test` runs
//
//	leftovers snapshot FILE   before the suite: what is there already
//	leftovers check FILE      after it: fails naming every topic that was not there before
//
// against KAFKA_BOOTSTRAP_SERVERS and DATABASE_URL. Tests create their topics with
// kafkatest.CreateTopic (deleted when the test ends) and their rows in schemas of their
// own (testenv.Schema); this is the proof that they all do. Topic deletion reaches the
// broker's metadata asynchronously: check waits up to -wait for the topics to go.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/jackc/pgx/v5"
)

// state is what the suite must leave as it found it.
type state struct {
	// Topics are the broker's topics, its internal ones (__*) aside.
	Topics []string `json:"topics"`
	// Stats are the topics of the dead-letter rows in the default schema, DLQ and original.
	Stats []string `json:"stats_topics"`
}

func main() {
	wait := flag.Duration("wait", time.Minute, "how long check waits for deleted topics to leave the metadata")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: leftovers [-wait 1m] snapshot|check FILE")
	}
	flag.Parse()
	if err := run(flag.Args(), *wait, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "leftovers:", err)
		os.Exit(1)
	}
}

func run(args []string, wait time.Duration, out io.Writer) error {
	if len(args) != 2 || args[0] != "snapshot" && args[0] != "check" {
		return errors.New("usage: leftovers [-wait 1m] snapshot|check FILE")
	}
	bootstrap, dbURL := os.Getenv("KAFKA_BOOTSTRAP_SERVERS"), os.Getenv("DATABASE_URL")
	if bootstrap == "" || dbURL == "" {
		return errors.New("KAFKA_BOOTSTRAP_SERVERS and DATABASE_URL must be set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait+time.Minute)
	defer cancel()
	if args[0] == "snapshot" {
		s, err := take(ctx, bootstrap, dbURL)
		if err != nil {
			return err
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return os.WriteFile(args[1], b, 0o644)
	}
	b, err := os.ReadFile(args[1])
	if err != nil {
		return err
	}
	var before state
	if err := json.Unmarshal(b, &before); err != nil {
		return fmt.Errorf("%s: %w", args[1], err)
	}
	var left []string
	for deadline := time.Now().Add(wait); ; {
		now, err := take(ctx, bootstrap, dbURL)
		if err != nil {
			return err
		}
		if left = added(before, now); len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if len(left) > 0 {
		return fmt.Errorf("the tests left %d topics in the dev stack: %s", len(left), strings.Join(left, ", "))
	}
	fmt.Fprintln(out, "leftovers: the tests left no topic in the broker and no row in the default schema")
	return nil
}

// added lists what now has and before had not: broker topics, and topics of rows in the
// default schema (prefixed "stats: ").
func added(before, now state) []string {
	var out []string
	for _, t := range now.Topics {
		if !slices.Contains(before.Topics, t) {
			out = append(out, t)
		}
	}
	for _, t := range now.Stats {
		if !slices.Contains(before.Stats, t) {
			out = append(out, "stats: "+t)
		}
	}
	return out
}

// take reads the broker's topics and the default schema's dead-letter topics.
func take(ctx context.Context, bootstrap, dbURL string) (state, error) {
	var s state
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap})
	if err != nil {
		return s, err
	}
	defer a.Close()
	md, err := a.GetMetadata(nil, true, 10000)
	if err != nil {
		return s, fmt.Errorf("list topics: %w", err)
	}
	for name := range md.Topics {
		if !strings.HasPrefix(name, "__") {
			s.Topics = append(s.Topics, name)
		}
	}
	sort.Strings(s.Topics)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return s, err
	}
	defer conn.Close(context.Background())
	var migrated bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('dead_letters') IS NOT NULL`).Scan(&migrated); err != nil || !migrated {
		return s, err
	}
	rows, err := conn.Query(ctx, `SELECT dlq_topic FROM dead_letters UNION SELECT original_topic FROM dead_letters ORDER BY 1`)
	if err != nil {
		return s, err
	}
	s.Stats, err = pgx.CollectRows(rows, pgx.RowTo[string])
	return s, err
}
