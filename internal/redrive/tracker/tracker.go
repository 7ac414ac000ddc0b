// Package tracker computes, for one partition, the offset that is safe to commit: the
// lowest offset read but not yet done, or one past the last offset read when all are
// done. Records finish out of order (produce acknowledgements, batched PostgreSQL writes),
// the commit watermark only ever moves over a contiguous done prefix. Pure logic, not safe
// for concurrent use: the partition's owner serializes calls.
package tracker

import (
	"fmt"
	"sort"
)

type entry struct {
	offset int64
	done   bool
}

// Partition tracks the offsets of one partition.
type Partition struct {
	pending []entry // offsets read, ascending; pending[head:] are live
	head    int
	next    int64 // one past the last offset added, or the start offset
	open    int   // live entries not done
}

// New starts tracking at start, the partition's committed (or starting) offset.
func New(start int64) *Partition { return &Partition{next: start} }

// Add records that offset was read. Offsets must increase; gaps (compacted or
// transactional topics) are allowed and count as done.
func (p *Partition) Add(offset int64) error {
	if offset < p.next {
		return fmt.Errorf("tracker: offset %d added after %d", offset, p.next)
	}
	p.pending = append(p.pending, entry{offset: offset})
	p.next = offset + 1
	p.open++
	return nil
}

// Done marks offset finished and reports whether it was pending.
func (p *Partition) Done(offset int64) bool {
	live := p.pending[p.head:]
	i := sort.Search(len(live), func(i int) bool { return live[i].offset >= offset })
	if i == len(live) || live[i].offset != offset || live[i].done {
		return false
	}
	live[i].done = true
	p.open--
	for p.head < len(p.pending) && p.pending[p.head].done {
		p.head++
	}
	if p.head == len(p.pending) {
		p.pending, p.head = p.pending[:0], 0
		return true
	}
	// Done entries only help skip to the next open one. Once they outnumber the open ones
	// (also behind a straggler that holds the watermark while the rest of the partition
	// flows past it) only the open ones are kept, so memory stays bounded by the offsets
	// in flight, not by how far the partition was read.
	if dead := len(p.pending) - p.open; dead > 1024 && dead > p.open {
		n := 0
		for _, e := range p.pending[p.head:] {
			if !e.done {
				p.pending[n] = e
				n++
			}
		}
		p.pending, p.head = p.pending[:n], 0
	}
	return true
}

// Watermark is the offset to commit: every offset below it is done.
func (p *Partition) Watermark() int64 {
	if p.head < len(p.pending) {
		return p.pending[p.head].offset
	}
	return p.next
}

// Next is one past the last offset read (the start offset when nothing was read).
func (p *Partition) Next() int64 { return p.next }

// Open is the number of offsets read and not yet done.
func (p *Partition) Open() int { return p.open }
