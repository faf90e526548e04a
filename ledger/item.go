package ledger

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/hookledger/hookledger/dynamo"
)

// Attribute names of the record and payload items.
const (
	attrPK         = "pk"
	attrSK         = "sk"
	attrSource     = "source"
	attrTenant     = "tenant"
	attrKey        = "event_key"
	attrType       = "event_type"
	attrStatus     = "status"
	attrAttempts   = "attempts"
	attrReclaims   = "reclaims"
	attrFailures   = "failures"
	attrInterrupts = "interrupted"
	attrGivenBack  = "given_back"
	attrReplayed   = "replayed_at"
	attrOwner      = "lease_owner"
	attrLeaseUntil = "lease_until"
	attrCreated    = "created_at"
	attrUpdated    = "updated_at"
	attrExpires    = "expires_at"
	attrLastError  = "last_error"
	attrSHA        = "body_sha256"
	attrDueShard   = "due_shard"
	attrDueAt      = "due_at"
	attrVersion    = "ver"
	attrBody       = "body"
	attrEncoding   = "enc"
	attrCreator    = "created_by"
	attrWriter     = "written_by"
	attrPayloadRef = "payload_ref"
	attrSkipped    = "skipped"
	attrApplyStale = "apply_stale"
	attrFormat     = "format"
	attrRelease    = "release"
	attrDeadShard  = "dead_shard"
	attrDeadAt     = "dead_at"

	skRecord  = "r"
	skPayload = "p"
)

// attrTrace is the record's trace header (Record.Trace).
const attrTrace = "trace"

func key(id Key, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: dynamo.S(id.PK()), attrSK: dynamo.S(sk)}
}

// decodeRecord turns a record item into a Record. It is lenient: missing
// attributes decode as zero values.
func decodeRecord(item map[string]types.AttributeValue) Record {
	r := Record{
		Key:        Key{Source: dynamo.GetS(item, attrSource), Tenant: dynamo.GetS(item, attrTenant), ID: dynamo.GetS(item, attrKey)},
		EventType:  dynamo.GetS(item, attrType),
		Status:     Status(dynamo.GetS(item, attrStatus)),
		Attempts:   int(dynamo.GetN(item, attrAttempts)),
		Failures:   int(dynamo.GetN(item, attrFailures)),
		Reclaims:   int(dynamo.GetN(item, attrReclaims)),
		GivenBack:  int(dynamo.GetN(item, attrGivenBack)),
		LeaseOwner: dynamo.GetS(item, attrOwner),
		LeaseUntil: dynamo.GetMillis(item, attrLeaseUntil),
		CreatedAt:  dynamo.GetMillis(item, attrCreated),
		UpdatedAt:  dynamo.GetMillis(item, attrUpdated),
		LastError:  dynamo.GetS(item, attrLastError),
		ReplayedAt: dynamo.GetMillis(item, attrReplayed),
		BodySHA256: dynamo.GetS(item, attrSHA),
		DueShard:   int(dynamo.GetN(item, attrDueShard)),
		DueAt:      dynamo.GetMillis(item, attrDueAt),
		Version:    dynamo.GetN(item, attrVersion),
		creator:    dynamo.GetS(item, attrCreator),
		writer:     dynamo.GetS(item, attrWriter),
		Steps:      decodeSteps(item),
		PayloadRef: dynamo.GetS(item, attrPayloadRef),
		Skipped:    dynamo.GetS(item, attrSkipped),
		ApplyStale: dynamo.GetMillis(item, attrApplyStale),
		Format:     int(dynamo.GetN(item, attrFormat)),
		Release:    dynamo.GetS(item, attrRelease),
		Runs:       decodeRuns(item),
	}
	r.Trace = dynamo.GetS(item, attrTrace)
	// A run claimed before the counter existed and answered after takes
	// back a count it never added: never show less than none.
	r.Interrupted = max(0, int(dynamo.GetN(item, attrInterrupts)))
	if r.Format == 0 {
		r.Format = 1
		r.fromFormat1(func(name string) bool { _, ok := item[name]; return ok })
	}
	if e := dynamo.GetN(item, attrExpires); e != 0 {
		r.ExpiresAt = time.Unix(e, 0).UTC()
	}
	if r.Source == "" && dynamo.GetS(item, attrPK) != "" {
		if id, err := ParsePK(dynamo.GetS(item, attrPK)); err == nil {
			r.Key = id
		}
	}
	return r
}
