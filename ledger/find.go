package ledger

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// DeadIndex is the sparse global secondary index of dead records, on
// dead_shard (hash of pk modulo Shards, as due_shard) and dead_at (epoch
// milliseconds of the burial). Bury and BuryStale put a record in it in
// the write that buries it; Replay takes it out. Find reads it; no
// function of the pipeline does.
const DeadIndex = "dead"

// deadSet is the burial's assignment of the dead index's keys.
const deadSet = attrDeadShard + " = :deadshard, " + attrDeadAt + " = :now"

// Query selects records for Find. Zero fields select everything.
type Query struct {
	Source string    // only this source
	Tenant string    // only this tenant
	Status Status    // only records in this status
	Type   string    // only this event type
	Since  time.Time // created at or after
	Until  time.Time // created before
	Limit  int       // records per page, 1 to MaxFindLimit (0: DefaultFindLimit)
	After  string    // Page.Next of the page before; "" for the first page
}

// Find's page sizes, and the most one call reads: index entries and
// records together. A page is never larger; a page that stops at the
// budget is short, and its Next goes on.
const (
	DefaultFindLimit = 50
	MaxFindLimit     = 100 // one BatchGetItem
	FindBudget       = 1000
)

// Page is what one Find returns.
type Page struct {
	Records []Record
	// Next continues after this page (Query.After); "" when there is no more.
	Next string
	// Read counts the index entries and records this page read.
	Read int
}

// Find pages through records, newest first, without scanning the table.
// It walks the due index (every record but the dead keeps its entry there:
// see the package doc) and, for dead records, the dead index, all shards
// merged by time: a record's creation or last retry (its due time less
// ReclaimAfter), or its burial. Source and tenant are matched in the index, on its projected
// pk; status, type and times on the records, read in one eventually
// consistent BatchGetItem per page (half a read unit each). Since also
// bounds the index time, which never precedes creation. A page reads at
// most FindBudget entries and records, so a narrow filter over a large
// table returns short pages; Next goes on where one stopped.
//
// Records are as the index and an eventually consistent read see them: a
// record a moment old may be missing, and one whose entry just moved may
// show twice across pages.
func (l *Ledger) Find(ctx context.Context, q Query) (Page, error) {
	if err := q.check(); err != nil {
		return Page{}, err
	}
	limit := cmp.Or(q.Limit, DefaultFindLimit)
	w, err := l.walk(q)
	if err != nil {
		return Page{}, err
	}
	var page Page
	seen := map[string]bool{}
	for need := limit; need > 0 && page.Read+need < FindBudget; need = limit - len(page.Records) {
		// A batch is never larger than what the page lacks, so the page
		// ends with a batch's last entry, and Next starts after it. The
		// budget keeps room for the batch's records.
		batch, read, err := w.take(ctx, l, need, FindBudget-page.Read-need)
		page.Read += read
		if err != nil {
			return Page{}, err
		}
		if len(batch) == 0 {
			break
		}
		ids := make([]Key, len(batch))
		for i, e := range batch {
			ids[i] = e.id
		}
		recs, err := l.getMany(ctx, "find records", ids, false)
		page.Read += len(ids)
		if err != nil {
			return Page{}, err
		}
		for _, e := range batch {
			if rec, ok := recs[e.id]; ok && !seen[e.pk] && q.matches(rec) {
				seen[e.pk] = true
				page.Records = append(page.Records, rec)
			}
		}
	}
	page.Next = w.cursor()
	return page, nil
}

func (q Query) check() error {
	switch {
	case q.Status != "" && !q.Status.Valid():
		return fmt.Errorf("%w: unknown status %q (want received, processing, done, failed or dead)", ErrInvalid, q.Status)
	case q.Limit < 0 || q.Limit > MaxFindLimit:
		return fmt.Errorf("%w: limit %d: want 1 to %d records a page", ErrInvalid, q.Limit, MaxFindLimit)
	case !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until):
		return fmt.Errorf("%w: since %v is not before until %v", ErrInvalid, q.Since, q.Until)
	}
	return nil
}

// matches applies the filters the index cannot.
func (q Query) matches(r Record) bool {
	return (q.Status == "" || r.Status == q.Status) && (q.Type == "" || r.EventType == q.Type) &&
		(q.Source == "" || r.Source == q.Source) && (q.Tenant == "" || r.Tenant == q.Tenant) &&
		(q.Since.IsZero() || !r.CreatedAt.Before(q.Since)) && (q.Until.IsZero() || r.CreatedAt.Before(q.Until))
}

// digest names the query a cursor belongs to.
func (q Query) digest(shards int) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%q %q %q %q %d %d %d", q.Source, q.Tenant, q.Status, q.Type, q.Since.UnixMilli(), q.Until.UnixMilli(), shards))
	return hex.EncodeToString(h[:6])
}

// stream is one shard of one index, read newest first.
type stream struct {
	index, hash, rng string
	shard            int
	shift            int64     // subtracted from the index time to merge (ms)
	pos              position  // where the next query starts
	buf              []entry   // read, not taken yet
	lek              *position // the last query's LastEvaluatedKey (nil: the end)
}

// position is where a stream stands: after the entry (At, PK, SK), at its
// start (zero), or at its end (Done).
type position struct {
	At   int64  `json:"t,omitempty"`
	PK   string `json:"k,omitempty"`
	SK   string `json:"s,omitempty"`
	Done bool   `json:"d,omitempty"`
}

type entry struct {
	id  Key
	pk  string
	pos position
}

// walker merges the streams a query reads.
type walker struct {
	q       Query
	shards  int
	streams []*stream
}

func (l *Ledger) walk(q Query) (*walker, error) {
	w := &walker{q: q, shards: l.opt.Shards}
	add := func(index, hash, rng string, shift time.Duration) {
		for s := range l.opt.Shards {
			w.streams = append(w.streams, &stream{index: index, hash: hash, rng: rng, shard: s, shift: shift.Milliseconds()})
		}
	}
	if q.Status != Dead {
		// A record is due ReclaimAfter after its creation or last retry:
		// merged at that time, beside the dead at their burial.
		add(DueIndex, attrDueShard, attrDueAt, l.opt.ReclaimAfter)
	}
	if q.Status == "" || q.Status == Dead {
		add(DeadIndex, attrDeadShard, attrDeadAt, 0)
	}
	if q.After == "" {
		return w, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.After)
	var c cursor
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	switch {
	case err != nil || len(c.P) != len(w.streams):
		return nil, fmt.Errorf("%w: the cursor is not one Find returned", ErrInvalid)
	case c.Q != q.digest(l.opt.Shards):
		return nil, fmt.Errorf("%w: the cursor belongs to another query (other filters or shards); start again from the first page", ErrInvalid)
	}
	for i, s := range w.streams {
		s.pos = c.P[i]
	}
	return w, nil
}

// cursor is a page's Next: the query it belongs to and each stream's position.
type cursor struct {
	Q string     `json:"q"`
	P []position `json:"p"`
}

// cursor is where the walk stands: "" at the end of every stream. Entries
// read but not taken are read again from it.
func (w *walker) cursor() string {
	c := cursor{Q: w.q.digest(w.shards), P: make([]position, len(w.streams))}
	done := true
	for i, s := range w.streams {
		c.P[i] = s.pos
		done = done && s.pos.Done
	}
	if done {
		return ""
	}
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// take returns up to n entries, newest first across the streams, reading
// at most budget index entries. An entry is taken once no stream can hold
// a newer one: each stream is read until it has one buffered, or its reads
// (filtered out) have passed the entry's time. It stops early when the
// budget runs out.
func (w *walker) take(ctx context.Context, l *Ledger, n, budget int) (batch []entry, read int, err error) {
	chunk := max(8, 2*n/len(w.streams))
	if w.q.Source != "" || w.q.Tenant != "" {
		// The index passes over the entries of other sources and tenants:
		// read more of them at once.
		chunk = max(chunk, budget/len(w.streams))
	}
	for len(batch) < n {
		var best, behind *stream
		for _, s := range w.streams {
			switch {
			case len(s.buf) > 0:
				if best == nil || s.buf[0].pos.At-s.shift > best.buf[0].pos.At-best.shift {
					best = s
				}
			case !s.pos.Done && (behind == nil || s.frontier() > behind.frontier()):
				behind = s
			}
		}
		if behind != nil && (best == nil || behind.frontier() >= best.buf[0].pos.At-best.shift) {
			// behind may hold an entry newer than best's: read on.
			if read >= budget {
				return batch, read, nil
			}
			got, err := l.readShard(ctx, w.q, behind, min(chunk, budget-read))
			read += got
			if err != nil {
				return batch, read, err
			}
			continue
		}
		if best == nil {
			break // every stream read to its end
		}
		e := best.buf[0]
		best.buf = best.buf[1:]
		switch {
		case len(best.buf) > 0:
			best.pos = e.pos
		case best.lek != nil:
			best.pos = *best.lek
		default:
			best.pos = position{Done: true}
		}
		batch = append(batch, e)
	}
	return batch, read, nil
}

// frontier is the newest merge time a stream with nothing buffered may
// still hold: the position its reads reached, or any time before its first.
func (s *stream) frontier() int64 {
	if s.pos.PK == "" {
		return math.MaxInt64
	}
	return s.pos.At - s.shift
}

// readShard reads the next up to limit entries of s and returns how many the
// index evaluated.
func (l *Ledger) readShard(ctx context.Context, q Query, s *stream, limit int) (int, error) {
	in := &dynamodb.QueryInput{
		TableName: &l.opt.Table, IndexName: aws.String(s.index),
		KeyConditionExpression:    aws.String("#h = :h"),
		ExpressionAttributeNames:  map[string]string{"#h": s.hash},
		ExpressionAttributeValues: map[string]types.AttributeValue{":h": dynamo.N(int64(s.shard))},
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(max(limit, 1))),
	}
	if !q.Since.IsZero() {
		// The index time is never before the record's creation.
		*in.KeyConditionExpression += " AND #r >= :since"
		in.ExpressionAttributeNames["#r"] = s.rng
		in.ExpressionAttributeValues[":since"] = dynamo.Millis(q.Since)
	}
	switch {
	case q.Source != "":
		prefix := "ev#" + escape(q.Source) + "#"
		if q.Tenant != "" {
			prefix += escape(q.Tenant) + "#"
		}
		in.FilterExpression = aws.String("begins_with(pk, :prefix)")
		in.ExpressionAttributeValues[":prefix"] = dynamo.S(prefix)
	case q.Tenant != "":
		// The separators are escaped inside parts: "#T#" is the tenant, or
		// a source of that name, which the exact check below leaves out.
		in.FilterExpression = aws.String("contains(pk, :tenant)")
		in.ExpressionAttributeValues[":tenant"] = dynamo.S("#" + escape(q.Tenant) + "#")
	}
	if !s.pos.Done && s.pos.PK != "" {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			s.hash: dynamo.N(int64(s.shard)), s.rng: dynamo.N(s.pos.At), attrPK: dynamo.S(s.pos.PK), attrSK: dynamo.S(s.pos.SK),
		}
	}
	out, err := l.db.Query(ctx, in)
	if err != nil {
		return 0, fmt.Errorf("find in table %s: %s index shard %d: %w: %v", l.opt.Table, s.index, s.shard, ErrUnavailable, err)
	}
	for _, it := range out.Items {
		pk, sk := dynamo.GetS(it, attrPK), dynamo.GetS(it, attrSK)
		p := position{At: dynamo.GetN(it, s.rng), PK: pk, SK: sk}
		id, err := ParsePK(pk)
		if err != nil || sk != skRecord || q.Source != "" && id.Source != q.Source || q.Tenant != "" && id.Tenant != q.Tenant {
			continue // not a record of the query; the next position passes it
		}
		s.buf = append(s.buf, entry{id: id, pk: pk, pos: p})
	}
	s.lek = nil
	if lek := out.LastEvaluatedKey; len(lek) > 0 {
		s.lek = &position{At: dynamo.GetN(lek, s.rng), PK: dynamo.GetS(lek, attrPK), SK: dynamo.GetS(lek, attrSK)}
	}
	if len(s.buf) == 0 {
		if s.lek == nil {
			s.pos = position{Done: true}
		} else {
			s.pos = *s.lek
		}
	}
	return int(max(out.ScannedCount, int32(len(out.Items)))), nil
}
