// Package local drives the three functions' handlers on one machine, as
// hookledger dev does: an HTTP server, SQS pollers and a ticker in place of
// API Gateway, the event source mapping and the schedule.
package local

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/engine"
	"github.com/hookledger/hookledger/internal/fallback"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/reclaimer"
)

// Pipeline runs the three functions' handlers in one process.
type Pipeline struct {
	Receiver  *receiver.Handler
	Processor *processor.Handler
	Reclaimer *reclaimer.Handler
	SQS       *sqs.Client
	QueueURL  string
	Log       *slog.Logger
}

// ReceiverTimeout is each receiver request's deadline, the template's
// receiver Timeout. A record's first write lands within it of its stamp,
// inside the lag the reclaimer's marks keep; a write retried for minutes
// could fall behind a mark and never be looked at.
const ReceiverTimeout = 10 * time.Second

// Run serves the receiver on ln, runs pollers SQS pollers that hand each
// batch to the processor with a deadline of timeout, and the reclaimer every
// tick, until ctx ends. A nil handler's part does not run (without a
// receiver, ln may be nil). Settings that are not positive are errors.
func (d *Pipeline) Run(ctx context.Context, ln net.Listener, pollers int, timeout, every time.Duration) error {
	switch {
	case pollers < 1:
		return fmt.Errorf("local: %d pollers: want at least 1", pollers)
	case timeout <= 0:
		return fmt.Errorf("local: function timeout %v: want a positive deadline", timeout)
	case every <= 0:
		return fmt.Errorf("local: reclaimer interval %v: want a positive interval", every)
	}
	var wg sync.WaitGroup
	for range pollers {
		if d.Processor != nil {
			wg.Go(func() { d.poll(ctx, timeout) })
		}
	}
	if d.Reclaimer != nil {
		wg.Go(func() { d.tick(ctx, timeout, every) })
	}
	if d.Receiver == nil {
		<-ctx.Done()
		wg.Wait()
		return ctx.Err()
	}
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	err := srv.Serve(ln)
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return ctx.Err()
	}
	return err
}

// tick is the schedule: it runs the reclaimer every tick until ctx ends.
func (d *Pipeline) tick(ctx context.Context, timeout, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			// A deadline, as Lambda gives: the run keeps to its budget, and
			// its run lock expires with it should the process die.
			rctx, cancel := context.WithTimeout(ctx, timeout)
			d.Reclaimer.Handle(rctx, nil)
			cancel()
		}
	}
}

// ServeHTTP turns a request into the HTTP API's event and writes the receiver's answer.
func (d *Pipeline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		w.Write([]byte("ok\n"))
		return
	}
	limit := int64(fallback.Positive(d.Receiver.MaxBody, receiver.DefaultMaxBody))
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		http.Error(w, `{"error":"could not read body"}`, http.StatusBadRequest)
		return
	}
	ev := events.APIGatewayV2HTTPRequest{
		RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery, Headers: map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: r.Host,
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path}},
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) == 3 && parts[0] == "webhooks" {
		ev.PathParameters = map[string]string{"source": parts[1], "tenant": parts[2]}
	}
	for k, vs := range r.Header {
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	ev.Headers["host"] = r.Host
	ev.Headers["x-forwarded-proto"] = "http"
	// API Gateway base64-encodes bodies that are not text.
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	ctx, cancel := context.WithTimeout(r.Context(), ReceiverTimeout)
	defer cancel()
	resp, _ := d.Receiver.Handle(ctx, ev)
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	io.WriteString(w, resp.Body)
}

// poll is the event source mapping: receive a batch, hand it to the
// processor with a deadline, delete what it did not report as failed.
func (d *Pipeline) poll(ctx context.Context, timeout time.Duration) {
	for ctx.Err() == nil {
		out, err := d.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: &d.QueueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount,
				sqstypes.MessageSystemAttributeNameAWSTraceHeader},
		})
		if err != nil {
			if ctx.Err() == nil {
				d.Log.Warn("receive from queue failed", "error", err.Error())
				time.Sleep(time.Second)
			}
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		batch := events.SQSEvent{Records: make([]events.SQSMessage, len(out.Messages))}
		handles := map[string]string{}
		for i, m := range out.Messages {
			batch.Records[i] = events.SQSMessage{MessageId: aws.ToString(m.MessageId), Body: aws.ToString(m.Body),
				ReceiptHandle: aws.ToString(m.ReceiptHandle), Attributes: m.Attributes}
			handles[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
		}
		bctx, cancel := context.WithTimeout(ctx, timeout)
		resp, _ := d.Processor.Handle(bctx, batch)
		cancel()
		for _, f := range resp.BatchItemFailures {
			delete(handles, f.ItemIdentifier)
		}
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for id, h := range handles {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String(h)})
		}
		if len(entries) > 0 {
			if _, err := d.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &d.QueueURL, Entries: entries}); err != nil && ctx.Err() == nil {
				d.Log.Warn("delete from queue failed; messages will be redelivered", "error", err.Error())
			}
		}
	}
}

// New builds the three handlers, the processor routing through routes.
func New(c config.Config, cfg aws.Config, routes engine.Routes, getenv func(string) string, log *slog.Logger) (*Pipeline, error) {
	rcv, err := receiver.FromConfig(c, cfg, getenv, log)
	if err != nil {
		return nil, err
	}
	proc, err := processor.FromConfig(c, cfg, routes, log)
	if err != nil {
		return nil, err
	}
	rec, err := reclaimer.FromConfig(c, cfg, log)
	if err != nil {
		return nil, err
	}
	return &Pipeline{Receiver: rcv, Processor: proc, Reclaimer: rec, SQS: sqs.NewFromConfig(cfg), QueueURL: c.QueueURL, Log: log}, nil
}
