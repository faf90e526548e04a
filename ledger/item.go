package ledger

import (
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

	skRecord  = "r"
	skPayload = "p"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func ms(t time.Time) types.AttributeValue {
	return n(t.UnixMilli())
}

func key(id ID, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: s(id.PK()), attrSK: s(sk)}
}

func getS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(item map[string]types.AttributeValue, name string) int64 {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

func getMS(item map[string]types.AttributeValue, name string) time.Time {
	v := getN(item, name)
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// decodeRecord turns a record item into a Record. It is lenient: missing
// attributes decode as zero values.
func decodeRecord(item map[string]types.AttributeValue) Record {
	r := Record{
		ID:         ID{Source: getS(item, attrSource), Tenant: getS(item, attrTenant), Key: getS(item, attrKey)},
		EventType:  getS(item, attrType),
		Status:     Status(getS(item, attrStatus)),
		Attempts:   int(getN(item, attrAttempts)),
		Failures:   int(getN(item, attrFailures)),
		Reclaims:   int(getN(item, attrReclaims)),
		GivenBack:  int(getN(item, attrGivenBack)),
		LeaseOwner: getS(item, attrOwner),
		LeaseUntil: getMS(item, attrLeaseUntil),
		CreatedAt:  getMS(item, attrCreated),
		UpdatedAt:  getMS(item, attrUpdated),
		LastError:  getS(item, attrLastError),
		ReplayedAt: getMS(item, attrReplayed),
		BodySHA256: getS(item, attrSHA),
		DueShard:   int(getN(item, attrDueShard)),
		DueAt:      getMS(item, attrDueAt),
		Version:    getN(item, attrVersion),
		creator:    getS(item, attrCreator),
		writer:     getS(item, attrWriter),
		Steps:      decodeSteps(item),
		PayloadRef: getS(item, attrPayloadRef),
		Skipped:    getS(item, attrSkipped),
		ApplyStale: getMS(item, attrApplyStale),
	}
	// A run claimed before the counter existed and answered after takes
	// back a count it never added: never show less than none.
	r.Interrupted = max(0, int(getN(item, attrInterrupts)))
	if e := getN(item, attrExpires); e != 0 {
		r.ExpiresAt = time.Unix(e, 0).UTC()
	}
	if r.Source == "" && getS(item, attrPK) != "" {
		if id, err := ParsePK(getS(item, attrPK)); err == nil {
			r.ID = id
		}
	}
	return r
}
