package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/hookledger/hookledger/internal/config"
	"github.com/hookledger/hookledger/internal/processor"
	"github.com/hookledger/hookledger/internal/receiver"
	"github.com/hookledger/hookledger/internal/reclaimer"
	"github.com/hookledger/hookledger/internal/sdkconfig"
)

func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("dev", "dev [--addr 127.0.0.1:8080] [--reclaim-every 10s] [--function-timeout 30s]", stderr)
	addr := fs.String("addr", "127.0.0.1:8080", "address to serve the receiver on (POST /webhooks/{source}/{tenant})")
	every := fs.Duration("reclaim-every", 10*time.Second, "how often to run the reclaimer")
	timeout := fs.Duration("function-timeout", 30*time.Second, "deadline given to each processor batch, as Lambda's timeout would")
	workers := fs.Int("pollers", 2, "concurrent SQS pollers")
	if code := parse(fs, args, stdout); code >= 0 {
		return code
	}
	fs.Usage = func() {}
	c, err := config.Load(os.Getenv)
	if err == nil {
		err = c.ValidateReceiver()
	}
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\nRun `hookledger setup` to create the table and queues; it prints the variables to export.\n", err)
		return 2
	}
	log := c.Logger(stdout)
	cfg, err := sdkconfig.Load(ctx, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	d, err := newDev(c, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "dev: listen on %s: %v (is another dev server running? pick --addr)\n", *addr, err)
		return 1
	}
	log.Info("dev pipeline up", "addr", ln.Addr().String(), "table", c.Table, "queue_url", c.QueueURL)
	if err := d.run(ctx, ln, *workers, *timeout, *every); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "dev: %v\n", err)
		return 1
	}
	return 0
}

// dev runs the three functions' handlers in one process: the very same
// handler code the Lambdas run, driven by an HTTP server, SQS pollers and a
// ticker instead of API Gateway, the event source mapping and EventBridge.
type dev struct {
	receiver  *receiver.Handler
	processor *processor.Handler
	reclaimer *reclaimer.Handler
	sqs       *sqs.Client
	queueURL  string
	log       *slog.Logger
}

func newDev(c config.Config, cfg aws.Config, log *slog.Logger) (*dev, error) {
	rcv, err := receiver.FromConfig(c, cfg, os.Getenv, log)
	if err != nil {
		return nil, err
	}
	proc, err := c.Processor(cfg, log)
	if err != nil {
		return nil, err
	}
	rec, err := c.Reclaimer(cfg, log)
	if err != nil {
		return nil, err
	}
	return &dev{receiver: rcv, processor: proc, reclaimer: rec, sqs: sqs.NewFromConfig(cfg), queueURL: c.QueueURL, log: log}, nil
}

func (d *dev) run(ctx context.Context, ln net.Listener, pollers int, timeout, every time.Duration) error {
	srv := &http.Server{Handler: d, ReadHeaderTimeout: 5 * time.Second}
	var wg sync.WaitGroup
	for range max(pollers, 1) {
		wg.Go(func() { d.poll(ctx, timeout) })
	}
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				d.reclaimer.Handle(ctx, nil)
			}
		}
	})
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

// ServeHTTP turns an HTTP request into API Gateway's v2 event, as the HTTP
// API would, and writes the receiver's answer.
func (d *dev) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/healthz" {
		w.Write([]byte("ok\n"))
		return
	}
	limit := int64(d.receiver.MaxBody)
	if limit <= 0 {
		limit = receiver.DefaultMaxBody
	}
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
	resp, _ := d.receiver.Handle(r.Context(), ev)
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	io.WriteString(w, resp.Body)
}

// poll is the event source mapping: receive a batch, hand it to the
// processor with a deadline, delete what it did not report as failed.
func (d *dev) poll(ctx context.Context, timeout time.Duration) {
	for ctx.Err() == nil {
		out, err := d.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: &d.queueURL, MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			if ctx.Err() == nil {
				d.log.Warn("receive from queue failed", "error", err.Error())
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
		resp, _ := d.processor.Handle(bctx, batch)
		cancel()
		for _, f := range resp.BatchItemFailures {
			delete(handles, f.ItemIdentifier)
		}
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for id, h := range handles {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(id), ReceiptHandle: aws.String(h)})
		}
		if len(entries) > 0 {
			if _, err := d.sqs.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &d.queueURL, Entries: entries}); err != nil && ctx.Err() == nil {
				d.log.Warn("delete from queue failed; messages will be redelivered", "error", err.Error())
			}
		}
	}
}
