package ledger_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/hookledger/hookledger/ledger"
)

// TestMain leaves the examples out when no emulator endpoint is
// configured: they run against a real DynamoDB endpoint, and `go test
// ./...` offline must stay green (the integration tests skip themselves
// with a message). `make test` always configures one, so in CI the
// examples always run and their output is checked.
func TestMain(m *testing.M) {
	flag.Parse()
	if exampleEndpoint() == "" && os.Getenv("HOOKLEDGER_REQUIRE_EMULATOR") != "1" && flag.Lookup("test.run").Value.String() == "" {
		fmt.Fprintln(os.Stderr, "ledger: no emulator endpoint (HOOKLEDGER_TEST_ENDPOINT); the examples, which run against one, are left out")
		flag.Set("test.run", "^(Test|Fuzz)")
	}
	os.Exit(m.Run())
}

func exampleEndpoint() string {
	if ep := os.Getenv("HOOKLEDGER_TEST_ENDPOINT"); ep != "" {
		return ep
	}
	return os.Getenv("AWS_ENDPOINT_URL")
}

// exampleTable makes a throwaway ledger table on the emulator.
func exampleTable(ctx context.Context) (*dynamodb.Client, string, func()) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithBaseEndpoint(exampleEndpoint()),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("test", "test", "")))
	if err != nil {
		panic(err)
	}
	db := dynamodb.NewFromConfig(cfg)
	var b [4]byte
	rand.Read(b[:])
	name := "hl-example-" + hex.EncodeToString(b[:])
	if err := ledger.CreateTable(ctx, db, name); err != nil {
		panic(err)
	}
	return db, name, func() { db.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}) }
}

// The life of one event, against DynamoDB (here the emulator that `make
// test` starts): the receiver creates the record, and a duplicate delivery
// finds it; a worker claims a lease, records its first step between
// steps, and completes with the last step's result folded into the same
// write; a redelivery finds the record done.
func Example() {
	ctx := context.Background()
	db, table, drop := exampleTable(ctx)
	defer drop()
	l, err := ledger.New(db, ledger.Options{Table: table})
	if err != nil {
		panic(err)
	}
	id := ledger.Key{Source: "stripe", Tenant: "acme", ID: "evt_1NG8Du2eZvKYlo2CUI79vXWy"}

	// Receiver: one conditional put per delivery.
	_, created, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid"})
	fmt.Println("first delivery created:", created, err)
	rec, created, err := l.Create(ctx, ledger.NewEvent{Key: id, Type: "invoice.paid"})
	fmt.Println("second delivery created:", created, "status:", rec.Status, err)

	// Processor: lease, steps, complete.
	lease, err := l.Claim(ctx, id, time.Minute)
	if err != nil {
		panic(err)
	}
	fmt.Println("claimed, attempt", lease.Record.Attempts)
	// ... the charge happens here, with its downstream idempotency key ...
	if _, err := l.SaveSteps(ctx, lease, ledger.StepChange{Name: "charge", Status: ledger.StepDone, Result: "ch_1"}); err != nil {
		panic(err)
	}
	// ... the notification happens here ...
	done, err := l.Complete(ctx, lease, ledger.StepChange{Name: "notify", Status: ledger.StepDone, Result: "ntf_1"})
	fmt.Println("completed:", done.Status, "charge:", done.Steps["charge"].Result, "notify:", done.Steps["notify"].Result, err)

	// A redelivery of the message: the record is done, so the worker acks.
	_, err = l.Claim(ctx, id, time.Minute)
	var se *ledger.StateError
	fmt.Println("redelivery refused as terminal:", errors.Is(err, ledger.ErrTerminal) && errors.As(err, &se) && se.Record.Status == ledger.Done)
	// Output:
	// first delivery created: true <nil>
	// second delivery created: false status: received <nil>
	// claimed, attempt 1
	// completed: done charge: ch_1 notify: ntf_1 <nil>
	// redelivery refused as terminal: true
}

// NewID is where a delivery's identity enters the ledger: every rule of
// its three parts is checked there, once.
func ExampleNewKey() {
	id, err := ledger.NewKey("stripe", "acme", "evt_1#2")
	fmt.Println(id.PK(), err)
	_, err = ledger.NewKey("stripe", "acme", "evt_\uffff")
	fmt.Println(errors.Is(err, ledger.ErrInvalid), errors.Is(err, ledger.ErrText))
	// Output:
	// ev#stripe#acme#evt_1%232 <nil>
	// true true
}
