// Package cli holds what cmd/hookledger and the lab's hooklab share: flag
// sets whose --help goes to stdout, an HTTP transport that reaches emulated
// API hosts, and signed-delivery plumbing.
package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"
)

// NewFlags returns a flag set for program's command name, with usage errors to stderr (see Parse).
func NewFlags(program, name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s\n\n", program, synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses args; it returns -1 to go on, or the exit code. --help prints
// the usage once, to stdout, and returns 0; a usage error prints the error
// and the usage to stderr and returns 2. (flag.FlagSet.Parse alone prints
// the usage to one stream for both.)
func Parse(fs *flag.FlagSet, args []string, stdout io.Writer) int {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	switch {
	case errors.Is(err, flag.ErrHelp):
		stderr := fs.Output()
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return 0
	case err != nil:
		fs.Usage() // flag has printed the error to the flag set's output
		return 2
	}
	return -1
}

// ParseWhen reads a time given on a command line or in a form: RFC 3339
// (2026-01-02T15:04:05Z), or a positive duration before now (90m, 24h).
// "" is the zero time.
func ParseWhen(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("time %q: want RFC 3339 (2026-01-02T15:04:05Z) or a positive duration ago (90m, 24h)", s)
}

// RandomHex returns n random hex characters.
func RandomHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// LocalhostTransport dials *.localhost on the loopback address: emulators
// name an HTTP API {id}.execute-api.localhost, which not all resolvers know.
func LocalhostTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
	return tr
}

// Post sends one delivery and returns the status and X-Hookledger-Result.
func Post(ctx context.Context, client *http.Client, url string, hdr http.Header, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, vs := range hdr {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Hookledger-Result"), nil
}

// SampleInvoice is a Stripe-style invoice.paid event.
func SampleInvoice(id string, amount int) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"invoice.paid","created":%d,"data":{"object":{"object":"invoice","amount_paid":%d,"currency":"usd","customer":"cus_%s"}}}`,
		id, time.Now().Unix(), amount, RandomHex(6))
}

// Command is one subcommand of a program.
type Command struct {
	Summary string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// Program is a command-line program made of subcommands.
type Program struct {
	Name     string
	Commands map[string]Command
	Footer   string // printed after the list of commands
}

// Usage prints the program's commands.
func (p Program) Usage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s <command> [flags]\n\ncommands:\n", p.Name)
	names := make([]string, 0, len(p.Commands))
	for n := range p.Commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, p.Commands[n].Summary)
	}
	fmt.Fprintf(w, "\nRun '%s <command> --help' for a command's flags.\n%s\n", p.Name, p.Footer)
}

// Run runs the subcommand args names; it returns 2 for a missing or unknown one.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		p.Usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		p.Usage(stdout)
		return 0
	}
	cmd, ok := p.Commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n", p.Name, args[0])
		p.Usage(stderr)
		return 2
	}
	return cmd.Run(ctx, args[1:], stdout, stderr)
}

// CheckInt reports an int flag of fs outside lo..hi (hi < lo: no upper
// bound), naming the flag, the range and the default.
func CheckInt(fs *flag.FlagSet, name string, lo, hi int) error {
	f := fs.Lookup(name)
	v, _ := f.Value.(flag.Getter).Get().(int)
	switch {
	case hi < lo && v < lo:
		return fmt.Errorf("--%s %d: want at least %d (default %s)", name, v, lo, f.DefValue)
	case hi >= lo && (v < lo || v > hi):
		return fmt.Errorf("--%s %d: want %d to %d (default %s)", name, v, lo, hi, f.DefValue)
	}
	return nil
}

// CheckFloat is CheckInt for a float64 flag, within lo..hi.
func CheckFloat(fs *flag.FlagSet, name string, lo, hi float64) error {
	f := fs.Lookup(name)
	v, _ := f.Value.(flag.Getter).Get().(float64)
	if !(v >= lo && v <= hi) { // NaN too
		return fmt.Errorf("--%s %v: want %v to %v (default %s)", name, v, lo, hi, f.DefValue)
	}
	return nil
}

// CheckDuration reports a duration flag of fs that is not positive.
func CheckDuration(fs *flag.FlagSet, name string) error {
	f := fs.Lookup(name)
	if v, _ := f.Value.(flag.Getter).Get().(time.Duration); v <= 0 {
		return fmt.Errorf("--%s %v: want a positive duration (default %s)", name, v, f.DefValue)
	}
	return nil
}

// FirstError returns the first of errs that is not nil.
func FirstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Fail prints "what: err" to w and returns code, the command's exit code.
func Fail(w io.Writer, what string, code int, err error) int {
	fmt.Fprintf(w, "%s: %v\n", what, err)
	return code
}
