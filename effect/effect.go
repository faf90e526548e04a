// Package effect is where your side effects live: the code that runs once in
// effect per webhook event, whatever the senders and the crashes do.
//
// Register routes events to handlers by source and event type. A handler
// performs its effects as named steps (ev.Step); the ledger records each
// step's completion, so a retry resumes after the last completed step. See
// package hookledger for the rules, and invoice_test.go for how to test a
// handler with hookledgertest (crash after any step, count the runs).
//
// Effects own their settings: Register reads them once, at cold start, and
// returns an error naming the variable and the fix when one is missing, so a
// misconfigured processor stops at cold start instead of skipping effects.
// A setting reaches the processor through the "Effect settings" part of
// template.yaml (a parameter and one line under the processor's
// environment).
//
// The template ships one handler, InvoicePaid: charge the invoice through a
// payments API that honours Idempotency-Key, then notify the customer
// through an API that has no idempotency at all. Replace it with yours.
package effect

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/hookledger/hookledger"
)

// Settings the shipped effects read, each a processor environment variable.
const (
	envPaymentsURL = "PAYMENTS_URL" // the payments API the charge step calls
	envNotifyURL   = "NOTIFY_URL"   // the notification API the notify step calls
)

// Register adds your routes. It runs once at cold start; getenv is os.Getenv
// in the processor's main.
func Register(r *hookledger.Router, getenv func(string) string) error {
	payments, err := baseURL(getenv, envPaymentsURL, "PaymentsUrl")
	if err != nil {
		return err
	}
	notify, err := baseURL(getenv, envNotifyURL, "NotifyUrl")
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	r.Handle("stripe", "invoice.paid", &InvoicePaid{
		Payments: &Payments{BaseURL: payments, Client: client},
		Notifier: &Notifier{BaseURL: notify, Client: client},
	})
	return nil
}

// baseURL reads a required http(s) URL setting.
func baseURL(getenv func(string) string, name, param string) (string, error) {
	v := getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is empty: set the %s parameter (template.yaml, Effect settings) or, locally, export %s", name, param, name)
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s=%q: want an http or https URL such as https://api.example.com", name, v)
	}
	return v, nil
}
