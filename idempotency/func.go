package idempotency

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Config configures one wrapped function.
type Config[In, Out any] struct {
	// Key returns the key material from the input: a string, or any value
	// that encodes as JSON (a struct, a list of fields). nil or "" means the
	// input has no key. Set Key or KeyPath, not both.
	Key func(In) (any, error)
	// KeyPath selects the key material from the input's JSON encoding,
	// e.g. "body.order_id" or "headers.idempotency-key" (see the package
	// doc for the syntax; "$" is the whole input).
	KeyPath string
	// Validate returns the payload fields that must not change under one
	// key; a repeat whose fields differ gets ErrPayloadMismatch. Optional;
	// set Validate or ValidatePath, not both.
	Validate func(In) (any, error)
	// ValidatePath selects those fields from the input's JSON encoding.
	ValidatePath string
	// OptionalKey runs the function without idempotency when the input has
	// no key (outcome Unkeyed, logged and counted). By default that is
	// ErrNoKey and nothing runs.
	OptionalKey bool
	// Expiry overrides Options.Expiry for this function.
	Expiry time.Duration
	// Wait, when positive, waits up to this long (and never past the
	// context's deadline) for another invocation holding the key to finish,
	// then replays its result; without it, or when the wait ends first, the
	// call fails fast with ErrInProgress. Waiting polls with consistent
	// reads, backing off from 20 ms to 500 ms.
	Wait time.Duration
	// OnReplay, when set, adjusts a replayed result before it is returned,
	// e.g. to mark an HTTP response (ReplayHeaderV2 does).
	OnReplay func(ctx context.Context, in In, out Out, info Info) Out
}

// Func is a function made idempotent by Wrap.
type Func[In, Out any] struct {
	s        *Store
	op       string
	fn       func(context.Context, In) (Out, error)
	c        Config[In, Out]
	keyPath  paths
	valPath  paths
	needJSON bool
}

// Wrap makes fn idempotent under the operation's name: calls with the same
// key run fn once and get its stored result back until the record
// expires. The name is the key space (two functions wrapped with one name
// share results); errors in the configuration are reported here, at cold
// start.
//
//	f, err := idempotency.Wrap(store, "create-order", createOrder, idempotency.Config[Req, Resp]{KeyPath: "order_id"})
//	lambda.Start(f.Handle)
func Wrap[In, Out any](s *Store, operation string, fn func(context.Context, In) (Out, error), c Config[In, Out]) (*Func[In, Out], error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil *Store", ErrInvalid)
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: %s: nil function", ErrInvalid, operation)
	}
	if err := validOperation(operation); err != nil {
		return nil, err
	}
	f := &Func[In, Out]{s: s, op: operation, fn: fn, c: c}
	switch {
	case c.Key != nil && c.KeyPath != "":
		return nil, fmt.Errorf("%w: %s: set Key or KeyPath, not both", ErrInvalid, operation)
	case c.Key == nil && c.KeyPath == "":
		return nil, fmt.Errorf("%w: %s: no key: set Config.Key or Config.KeyPath (\"$\" for the whole input)", ErrInvalid, operation)
	case c.Validate != nil && c.ValidatePath != "":
		return nil, fmt.Errorf("%w: %s: set Validate or ValidatePath, not both", ErrInvalid, operation)
	case c.Expiry != 0 && c.Expiry < time.Second:
		return nil, fmt.Errorf("%w: %s: Expiry %v is under a second", ErrInvalid, operation, c.Expiry)
	case c.Wait < 0:
		return nil, fmt.Errorf("%w: %s: Wait %v is negative", ErrInvalid, operation, c.Wait)
	}
	var err error
	if c.KeyPath != "" {
		if f.keyPath, err = parsePaths(c.KeyPath); err != nil {
			return nil, fmt.Errorf("%w: %s: KeyPath: %v", ErrInvalid, operation, err)
		}
		f.needJSON = true
	}
	if c.ValidatePath != "" {
		if f.valPath, err = parsePaths(c.ValidatePath); err != nil {
			return nil, fmt.Errorf("%w: %s: ValidatePath: %v", ErrInvalid, operation, err)
		}
		f.needJSON = true
	}
	return f, nil
}

// Handle is the idempotent function, with fn's signature: hand it to
// lambda.Start. A replay returns the stored result (through OnReplay).
func (f *Func[In, Out]) Handle(ctx context.Context, in In) (Out, error) {
	out, _, err := f.Call(ctx, in)
	return out, err
}

// Call is Handle that also reports what happened: Info.Replayed() tells
// a stored result from a fresh one.
func (f *Func[In, Out]) Call(ctx context.Context, in In) (Out, Info, error) {
	sp := spec{op: f.op, optional: f.c.OptionalKey, wait: f.c.Wait, expiry: f.c.Expiry}
	if !f.s.opt.Disabled {
		if err := f.prepare(&sp, in); err != nil {
			var zero Out
			info := Info{Outcome: Errored}
			f.s.observe(ctx, sp, info, err)
			return zero, info, err
		}
	}
	out, info, err := execute(ctx, f.s, sp, func(ctx context.Context) (Out, error) { return f.fn(ctx, in) })
	if err == nil && info.Outcome == Replayed && f.c.OnReplay != nil {
		out = f.c.OnReplay(ctx, in, out, info)
	}
	return out, info, err
}

// prepare derives the key and validation digest from the input, before the
// function can change it.
func (f *Func[In, Out]) prepare(sp *spec, in In) error {
	var doc []byte
	_, isRaw := any(in).(json.RawMessage)
	if raw, ok := any(in).(json.RawMessage); ok && f.needJSON {
		doc = raw // the event's own bytes: paths read them as they are, and what they select is validated
	} else if f.needJSON {
		var err error
		if doc, err = json.Marshal(in); err != nil {
			return fmt.Errorf("idempotency %s: %w: the input does not encode as JSON, so paths cannot select from it: %w", f.op, ErrBadInput, err)
		}
	}
	material := func(fn func(In) (any, error), p paths, what string) ([]byte, error) {
		if fn != nil {
			v, err := fn(in)
			if err != nil {
				return nil, fmt.Errorf("idempotency %s: %w: %s: %w", f.op, ErrBadInput, what, err)
			}
			c, err := canonical(v)
			if err != nil {
				return nil, fmt.Errorf("idempotency %s: %w: %s does not encode as canonical JSON: %w", f.op, ErrBadInput, what, err)
			}
			return c, nil
		}
		c, err := p.selectCanonical(doc)
		if err == nil && !isRaw {
			// The paths read json.Marshal's encoding of in, which turned
			// invalid UTF-8 into U+FFFD.
			err = checkReplaced(c, in)
		}
		if err != nil {
			return nil, fmt.Errorf("idempotency %s: %w: %s %s: %w", f.op, ErrBadInput, what, p, err)
		}
		return c, nil
	}
	k, err := material(f.c.Key, f.keyPath, "key")
	if err != nil {
		return err
	}
	if !missing(k) {
		sp.key = f.op + "#" + digest(k)
	}
	if f.c.Validate != nil || f.valPath != nil {
		v, err := material(f.c.Validate, f.valPath, "validation")
		if err != nil {
			return err
		}
		sp.valid = digest(v)
	}
	return nil
}

// Do runs fn at most once per key under the operation's name, and returns
// its stored result on repeats: the way to make any function call
// idempotent. key is the key material (a string, or any value that
// encodes as JSON); nil or "" is ErrNoKey. For payload validation, waiting
// on an in-progress call or an optional key, use Wrap.
//
//	receipt, info, err := idempotency.Do(ctx, store, "charge", order.ID, func(ctx context.Context) (Receipt, error) {...})
func Do[Out any](ctx context.Context, s *Store, operation string, key any, fn func(context.Context) (Out, error)) (Out, Info, error) {
	var zero Out
	if err := validOperation(operation); err != nil {
		return zero, Info{Outcome: Errored}, err
	}
	if fn == nil {
		return zero, Info{Outcome: Errored}, fmt.Errorf("%w: %s: nil function", ErrInvalid, operation)
	}
	sp := spec{op: operation}
	if s != nil && !s.opt.Disabled {
		c, err := canonical(key)
		if err != nil {
			err = fmt.Errorf("idempotency %s: %w: key does not encode as canonical JSON: %w", operation, ErrBadInput, err)
			s.observe(ctx, sp, Info{Outcome: Errored}, err)
			return zero, Info{Outcome: Errored}, err
		}
		if !missing(c) {
			sp.key = operation + "#" + digest(c)
		}
	}
	return execute(ctx, s, sp, fn)
}
