package jobs

// Settings is the job runner's section of the worker's configuration (`jobs:`).
type Settings struct {
	// Concurrency is how many operator jobs (replays, discards) run at once, 1 to 64, each
	// at its own rate; one more slot takes only jobs that name their records, so a
	// single-record replay never waits behind bulk jobs.
	Concurrency int `yaml:"concurrency"`
}
