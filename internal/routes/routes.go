// Package routes is the worker's route configuration (`routes:` in its YAML file): names,
// DLQ topics, schedule, retry policy and limits, with defaults and validation that name
// the route and key of every invalid value.
package routes

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"gopkg.in/yaml.v3"

	"github.com/dlqops/dlq/internal/backoff"
	"github.com/dlqops/dlq/internal/headers"
)

// Config is one route of the worker's configuration (`routes:` in YAML).
type Config struct {
	// Name identifies the route in metrics, logs and the API: letters, digits, '.', '_',
	// '-'. Required.
	Name string `yaml:"name"`
	// Topics are DLQ topic names, or patterns starting with "^" (librdkafka regex
	// subscriptions).
	Topics []string `yaml:"topics"`
	// Group is the consumer group; workers with the same group split the partitions.
	Group string `yaml:"group"`
	// Schedule is a cron spec with optional seconds, or a descriptor (@every 1m, @hourly);
	// overlapping ticks are skipped.
	Schedule string `yaml:"schedule"`
	// MaxRetries: a record whose retry count reached it is parked as exhausted; at least 1.
	MaxRetries *int `yaml:"max_retries"`
	// Backoff: due = last failure + min(cap, base·factorⁿ) ± jitter; or `none`, and the
	// schedule is the only delay. Without it, the default applies; a mapping of your own
	// needs base.
	Backoff *Backoff `yaml:"backoff"`
	// RateLimit caps redriven records per second; 0 is unlimited.
	RateLimit float64 `yaml:"rate_limit"`
	// MaxInFlight bounds records read but not yet acknowledged or stored, each holding
	// about 5 KiB of worker memory (2 KiB of it in librdkafka) meanwhile. A broker that
	// pauses fills this window, so it sets a long run's peak memory.
	MaxInFlight int `yaml:"max_in_flight"`
	// AllowedTargets restricts the topics records may be redriven to (names or ^patterns);
	// empty allows every topic. A record for another topic is parked as target_not_allowed.
	AllowedTargets []string `yaml:"allowed_targets"`
	// StripHeaders and StripHeaderPrefixes drop foreign headers on redrive, on top of the
	// stack traces Spring and Kafka Connect attach (always dropped).
	StripHeaders        []string `yaml:"strip_headers"`
	StripHeaderPrefixes []string `yaml:"strip_header_prefixes"`
	// OnOffsetJump is what the worker does when the group's committed offset is ahead of
	// the ledger (a reset to latest: records skipped unread): rewind reads the skipped
	// range again, alarm only logs, counts and records it as lost.
	OnOffsetJump string `yaml:"on_offset_jump"`
	// Delivery is the guarantee of the route's redrives: at_least_once (a crash may send a
	// record twice; consumers de-duplicate on the redrive id) or exactly_once (redrives and
	// the DLQ offsets commit in one Kafka transaction: consumers reading read_committed
	// see each record once).
	Delivery string `yaml:"delivery"`
	// NotRetryable are error classes no redrive can cure: a record whose error class
	// matches an entry (the full class, its simple name, or a ^regex on the full class) is
	// parked as not_retryable when first read, its retry count untouched.
	NotRetryable []string `yaml:"not_retryable"`
	// Breaker holds the route's redrives while most of what it redrove comes back to the
	// DLQ (a downstream outage); on by default.
	Breaker Breaker `yaml:"breaker"`
	// RedriveTo is where redrives go: source (the original topic, every consumer group
	// reads it again), group_topic (the failing group's own topic, GroupTopicTemplate) or
	// group_header (the original topic with dlq-target-group naming the failing group).
	// A record whose failing group no header names is parked unknown_group on the latter two.
	RedriveTo string `yaml:"redrive_to"`
	// GroupTopicTemplate names a group's redrive topic from {topic} (the original topic)
	// and {group} (the failing group); allowed_targets binds it as any target.
	GroupTopicTemplate string `yaml:"group_topic_template"`
	// MetricGroups are the consumer groups the route's per-group metrics name; the groups
	// the headers name are anybody's text, so any other counts as "other".
	MetricGroups []string `yaml:"metric_groups"`
}

// What a route does on a forward offset jump.
const (
	OnJumpRewind = "rewind"
	OnJumpAlarm  = "alarm"
)

// A route's delivery guarantee.
const (
	DeliveryAtLeastOnce = "at_least_once"
	DeliveryExactlyOnce = "exactly_once"
)

// Backoff is the YAML form of backoff.Policy; the scalar `none` disables backoff.
type Backoff struct {
	// Base is the first delay.
	Base time.Duration `yaml:"base"`
	// Factor multiplies the delay at each retry; default 2.
	Factor float64 `yaml:"factor"`
	// Cap bounds the delay; default the larger of 1h and base.
	Cap time.Duration `yaml:"cap"`
	// Jitter spreads each delay by ± this fraction; default 0 in a mapping of your own.
	Jitter float64 `yaml:"jitter"`
	// None disables backoff: the cron interval is the only delay.
	None bool `yaml:"-"`
}

// UnmarshalYAML accepts `none` or a mapping.
func (b *Backoff) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if n.Value != "none" {
			return fmt.Errorf("line %d: backoff is `none` or a mapping with base, factor, cap, jitter", n.Line)
		}
		b.None = true
		return nil
	}
	type plain Backoff
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*b = Backoff(p)
	return nil
}

// Policy is the backoff policy the configuration describes.
func (b Backoff) Policy() backoff.Policy {
	if b.None {
		return backoff.Policy{}
	}
	return backoff.Policy{Base: b.Base, Factor: b.Factor, Cap: b.Cap, Jitter: b.Jitter}
}

// Defaults.
const (
	DefaultMaxRetries = 5
	// Each record in flight holds about 2 KiB in librdkafka (the record, and each of its
	// headers copied apart), and a broker's pause fills the window, so the window sets a
	// long run's peak RSS. 2,500 still allows 70 ms of acknowledgement latency at 36,000
	// records a second.
	DefaultMaxInFlight = 2500
	DefaultSchedule    = "@every 1m"
)

// DefaultBackoff is 30 s doubling up to 1 h, ±20 %.
var DefaultBackoff = Backoff{Base: 30 * time.Second, Factor: 2, Cap: time.Hour, Jitter: 0.2}

// Parser reads schedules: five fields, an optional leading seconds field, or a descriptor.
var Parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// WithDefaults fills unset values.
func (r *Config) WithDefaults() {
	if r.Group == "" && r.Name != "" {
		r.Group = "dlq-worker." + r.Name
	}
	if r.Schedule == "" {
		r.Schedule = DefaultSchedule
	}
	if r.MaxRetries == nil {
		n := DefaultMaxRetries
		r.MaxRetries = &n
	}
	if r.Backoff == nil {
		b := DefaultBackoff
		r.Backoff = &b
	} else if !r.Backoff.None {
		if r.Backoff.Factor == 0 {
			r.Backoff.Factor = DefaultBackoff.Factor
		}
		if r.Backoff.Cap == 0 {
			r.Backoff.Cap = max(DefaultBackoff.Cap, r.Backoff.Base)
		}
	}
	if r.MaxInFlight == 0 {
		r.MaxInFlight = DefaultMaxInFlight
	}
	if r.OnOffsetJump == "" {
		r.OnOffsetJump = OnJumpRewind
	}
	if r.Delivery == "" {
		r.Delivery = DeliveryAtLeastOnce
	}
	if r.RedriveTo == "" {
		r.RedriveTo = RedriveToSource
	}
	if r.GroupTopicTemplate == "" {
		r.GroupTopicTemplate = DefaultGroupTopicTemplate
	}
	r.Breaker.withDefaults()
}

var routeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Validate reports every invalid value, each named "routes[NAME].key".
func (r *Config) Validate() error {
	at := func(key string, format string, args ...any) error {
		return fmt.Errorf("routes[%s].%s: %s", r.Name, key, fmt.Sprintf(format, args...))
	}
	var errs []error
	if !routeName.MatchString(r.Name) {
		errs = append(errs, at("name", "%q must be 1-128 letters, digits, '.', '_' or '-'", r.Name))
	}
	if len(r.Topics) == 0 {
		errs = append(errs, at("topics", "at least one DLQ topic is required"))
	}
	for _, t := range r.Topics {
		if err := checkTopicPattern(t); err != nil {
			errs = append(errs, at("topics", "%v", err))
		}
	}
	if _, err := Parser.Parse(r.Schedule); err != nil {
		errs = append(errs, at("schedule", "%q: %v", r.Schedule, err))
	} else if err := checkSteps(r.Schedule); err != nil {
		errs = append(errs, at("schedule", "%q: %v", r.Schedule, err))
	}
	if r.MaxRetries != nil && *r.MaxRetries < 1 {
		errs = append(errs, at("max_retries", "must be at least 1, got %d", *r.MaxRetries))
	}
	if !r.Backoff.None {
		if r.Backoff.Base <= 0 {
			errs = append(errs, at("backoff.base", "must be positive (or set `backoff: none`), got %s", r.Backoff.Base))
		} else if err := r.Backoff.Policy().Validate(); err != nil {
			errs = append(errs, at("backoff", "%v", err))
		}
	}
	if r.RateLimit < 0 {
		errs = append(errs, at("rate_limit", "must not be negative, got %v", r.RateLimit))
	}
	if r.MaxInFlight < 1 {
		errs = append(errs, at("max_in_flight", "must be at least 1, got %d", r.MaxInFlight))
	}
	for _, t := range r.AllowedTargets {
		if err := checkTopicPattern(t); err != nil {
			errs = append(errs, at("allowed_targets", "%v", err))
		}
	}
	if _, err := CompileErrorMatcher(r.NotRetryable); err != nil {
		errs = append(errs, at("not_retryable", "%v", err))
	}
	if r.OnOffsetJump != OnJumpRewind && r.OnOffsetJump != OnJumpAlarm {
		errs = append(errs, at("on_offset_jump", "must be %q or %q, got %q", OnJumpRewind, OnJumpAlarm, r.OnOffsetJump))
	}
	if r.Delivery != DeliveryAtLeastOnce && r.Delivery != DeliveryExactlyOnce {
		errs = append(errs, at("delivery", "must be %q or %q, got %q", DeliveryAtLeastOnce, DeliveryExactlyOnce, r.Delivery))
	}
	errs = append(errs, r.Breaker.validate(at)...)
	errs = append(errs, r.validateGrouped(at)...)
	return errors.Join(errs...)
}

func checkTopicPattern(t string) error {
	if strings.HasPrefix(t, "^") {
		if _, err := regexp.Compile(t); err != nil {
			return fmt.Errorf("pattern %q: %v", t, err)
		}
		return nil
	}
	if !headers.ValidTopicName(t) {
		return fmt.Errorf("%q is not a topic name (or a pattern starting with ^)", t)
	}
	return nil
}

// ValidateAll validates every route and rejects duplicate names and groups.
func ValidateAll(routes []Config) error {
	var errs []error
	names, groups := map[string]bool{}, map[string]string{}
	for i := range routes {
		r := &routes[i]
		errs = append(errs, r.Validate())
		if names[r.Name] {
			errs = append(errs, fmt.Errorf("routes[%s].name: duplicate route name", r.Name))
		}
		names[r.Name] = true
		if other, ok := groups[r.Group]; ok {
			errs = append(errs, fmt.Errorf("routes[%s].group: %q is already the group of route %s", r.Name, r.Group, other))
		}
		groups[r.Group] = r.Name
	}
	return errors.Join(errs...)
}
