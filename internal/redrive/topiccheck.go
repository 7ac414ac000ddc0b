// The route's own topics: whether each name or pattern matches a partition in the
// cluster, cached, for readiness and for the outcome of a run.

package redrive

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// topicsCacheTTL bounds how often readiness probes ask the cluster for its topics.
const topicsCacheTTL = 10 * time.Second

// topicCheck caches the route's missing topics; Ready and the loop both ask for it, so
// its cache is guarded by mu.
type topicCheck struct {
	producer *kafka.Producer // for the cluster's metadata
	topics   []string        // the route's topics: names, or ^patterns

	mu  sync.Mutex
	at  time.Time
	err error
}

// missing reports the route's topics (names, or ^patterns) that match no partition
// in the cluster, or the metadata error.
func (c *topicCheck) missing(timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < topicsCacheTTL {
		return c.err
	}
	md, err := c.producer.GetMetadata(nil, true, int(timeout/time.Millisecond))
	if err != nil {
		return fmt.Errorf("kafka: cannot list topics: %w", err) // not cached: asked again at once
	}
	var missing []string
	for _, t := range c.topics {
		found := false
		if strings.HasPrefix(t, "^") {
			re := regexp.MustCompile(t) // validated
			for name, tm := range md.Topics {
				if re.MatchString(name) && len(tm.Partitions) > 0 {
					found = true
					break
				}
			}
		} else {
			tm, ok := md.Topics[t]
			found = ok && len(tm.Partitions) > 0
		}
		if !found {
			missing = append(missing, t)
		}
	}
	c.at, c.err = time.Now(), nil
	if len(missing) > 0 {
		sort.Strings(missing)
		c.err = fmt.Errorf("topics match no partition: %s", strings.Join(missing, ", "))
	}
	return c.err
}
