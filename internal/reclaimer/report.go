package reclaimer

import "github.com/hookledger/hookledger/ledger"

// How a run ended (Report.Stopped).
const (
	StopDrained     = "drained"      // every shard returned a short page
	StopBudget      = "budget"       // the time budget was spent with due records left
	StopPaced       = "paced"        // the queue stayed full until the budget was spent
	StopQueueDown   = "queue_down"   // the queue's depth could not be read: nothing re-driven into it
	StopCanceled    = "canceled"     // the context ended
	StopShardErrors = "shard_errors" // shards stopped on errors
	StopLocked      = "locked"       // another run holds the run lock
)

// Report counts what one run did.
type Report struct {
	Chain       int              `json:"chain"`
	Stopped     string           `json:"stopped"`
	Backlog     bool             `json:"backlog"`   // due records were left when the run stopped
	Continued   bool             `json:"continued"` // the run started its continuation
	Pages       int              `json:"pages"`
	Scanned     int              `json:"scanned"`
	Requeued    int              `json:"requeued"`
	Reset       int              `json:"reset"`
	Postponed   int              `json:"postponed"`
	Buried      int              `json:"buried"`
	Skipped     int              `json:"skipped"`
	Known       int              `json:"known"` // skipped unread: the run before, in this process, found them terminal
	Conflicts   int              `json:"conflicts"`
	Unsent      int              `json:"unsent"`   // SQS failed the entry; due again after RetryAfter, reclaim not counted
	Rejected    int              `json:"rejected"` // SQS refused the entry; the reclaim counts
	Errors      int              `json:"errors"`
	Marked      int              `json:"marked"`       // shards whose mark the run moved on (ledger.DueMarks)
	PacedMS     int64            `json:"paced_ms"`     // time workers spent waiting for room on the queue, summed
	RunMS       int64            `json:"run_ms"`       // wall time of the run
	DeadLetters DeadLetterReport `json:"dead_letters"` // what the run did with the DLQ

	held map[ledger.Key]bool // records of a page the run left where they were (hold)
}

// hold keeps the shard's mark before id's entry, which the run could not
// settle (an error, or a conflict with a claim that left its due time).
func (r *Report) hold(id ledger.Key) {
	if r.held == nil {
		r.held = map[ledger.Key]bool{}
	}
	r.held[id] = true
}

// Redriven is how many records the run put back on the queue.
func (r Report) Redriven() int { return r.Requeued + r.Reset }

func (r *Report) add(o Report) {
	r.Pages += o.Pages
	r.Scanned += o.Scanned
	r.Requeued += o.Requeued
	r.Reset += o.Reset
	r.Postponed += o.Postponed
	r.Buried += o.Buried
	r.Skipped += o.Skipped
	r.Known += o.Known
	r.Conflicts += o.Conflicts
	r.Unsent += o.Unsent
	r.Rejected += o.Rejected
	r.Errors += o.Errors
}
