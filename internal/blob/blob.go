// Package blob is hookledger's optional payload store: an S3 bucket for the
// bodies too large for a ledger item (or, with a threshold, from a size on).
// The receiver writes an event's object before it answers 2xx; the record
// and the message carry its key. The bucket's lifecycle rule expires
// objects with the ledger's retention.
package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/hookledger/hookledger/ledger"
)

// MaxObjectBytes bounds an object read back: no body larger than Lambda's 6 MB is accepted.
const MaxObjectBytes = 8 << 20

// API is the slice of the S3 client the store calls.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
}

var _ API = (*s3.Client)(nil)

// Errors callers branch on.
var (
	// ErrNotFound: no object under the key (never written, or expired).
	ErrNotFound = errors.New("blob: object not found")
	// ErrUnavailable: S3 failed, throttled, denied or could not be reached.
	ErrUnavailable = errors.New("blob: payload store unavailable")
)

// Store is one bucket and key prefix.
type Store struct {
	API    API
	Bucket string
	Prefix string // e.g. "payloads/"; the template grants each role this prefix only
}

// NewClient returns an S3 client for cfg, addressing buckets by path against
// an emulator (cfg.BaseEndpoint set), which has no per-bucket host names.
func NewClient(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = cfg.BaseEndpoint != nil
	})
}

// Key is the object key of an event's body: the prefix and the SHA-256 of
// the partition key and the body digest (S3 keys are at most 1,024 bytes).
// The digest is in it because a key may be used again before the lifecycle
// removes the old object: the newer record must never name the earlier body.
func (s *Store) Key(id ledger.Key, digest string) string {
	sum := sha256.Sum256([]byte(id.PK() + "\x00" + digest))
	return s.Prefix + hex.EncodeToString(sum[:])
}

// Put writes body under key. Writing the same body again is harmless: the
// key is the event's, and its body does not change.
func (s *Store) Put(ctx context.Context, key string, body []byte) error {
	_, err := s.API.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.Bucket, Key: &key, Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return fmt.Errorf("put payload object %s: %w: %v", key, ErrUnavailable, err)
	}
	return nil
}

// Get reads the object under key back. ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.API.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.Bucket, Key: &key})
	if err != nil {
		var nsk *types.NoSuchKey
		var api smithy.APIError
		if errors.As(err, &nsk) || errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound") {
			return nil, fmt.Errorf("payload object %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("get payload object %s: %w: %v", key, ErrUnavailable, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, MaxObjectBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read payload object %s: %w: %v", key, ErrUnavailable, err)
	}
	if len(b) > MaxObjectBytes {
		return nil, fmt.Errorf("payload object %s is over %d bytes: not a body hookledger wrote", key, MaxObjectBytes)
	}
	return b, nil
}

// payloads is the ledger's payload side, as the readers below need it.
type payloads interface {
	PayloadOf(ctx context.Context, rec ledger.Record) ([]byte, error)
}

// ErrMissing marks a body in neither place (with ledger.ErrNotFound or ErrNotFound).
var ErrMissing = errors.New("payload missing")

// Body returns rec's stored body: from the store when the record references
// an object, else from the ledger's payload item (ledger.PayloadOf). A
// missing body matches ErrMissing; store may be nil when rec references none.
func Body(ctx context.Context, l payloads, store *Store, rec ledger.Record) ([]byte, error) {
	if rec.PayloadRef == "" {
		b, err := l.PayloadOf(ctx, rec)
		if errors.Is(err, ledger.ErrNotFound) {
			return nil, fmt.Errorf("%w: %w", ErrMissing, err)
		}
		return b, err
	}
	if store == nil {
		return nil, fmt.Errorf("%s: the body is in the payload store (%s) but no store is configured (HOOKLEDGER_PAYLOAD_BUCKET)", rec.Key, rec.PayloadRef)
	}
	b, err := store.Get(ctx, rec.PayloadRef)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrMissing, err)
	}
	return b, err
}
