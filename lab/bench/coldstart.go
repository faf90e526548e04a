package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Build builds ./functions/<fn> for goarch the way the Makefile does
// (CGO_ENABLED=0, linux, -trimpath, -tags lambda.norpc, -ldflags "-s -w")
// into dir and returns the binary's path. stripped=false leaves the symbol
// table in, for attribution.
func Build(ctx context.Context, moduleDir, dir, fn, goarch string, stripped bool) (string, error) {
	out := filepath.Join(dir, fmt.Sprintf("%s-%s", fn, goarch))
	args := []string{"build", "-trimpath", "-tags", "lambda.norpc"}
	if stripped {
		args = append(args, "-ldflags=-s -w")
	} else {
		out += "-syms"
	}
	args = append(args, "-o", out, "./functions/"+fn)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s %s: %v\n%s", fn, goarch, err, b)
	}
	return out, nil
}

// Start is one measured cold start.
type Start struct {
	Init  time.Duration // process start to the first GET .../invocation/next
	RSSKB int           // resident set size while waiting for the first event
}

// ColdStart starts bin runs times with env plus AWS_LAMBDA_RUNTIME_API
// pointing at a fake Lambda Runtime API on localhost, and measures the time
// from process start to its first request for an event, and its idle RSS
// then. The fake never hands out an event; the process is killed.
func ColdStart(ctx context.Context, bin string, env []string, runs int) ([]Start, error) {
	var out []Start
	for range runs {
		s, err := coldStart(ctx, bin, env)
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
	return out, nil
}

func coldStart(ctx context.Context, bin string, env []string) (Start, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Start{}, err
	}
	next := make(chan time.Time, 1)
	release := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/2018-06-01/runtime/invocation/next" {
			select {
			case next <- time.Now():
			default:
			}
			select { // hold the long poll, as the real API does with no event
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		// An init error report or anything else: answer and note it.
		w.WriteHeader(http.StatusAccepted)
	})}
	go srv.Serve(ln)
	defer func() { close(release); srv.Close() }()

	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin)
	cmd.Env = append(append([]string{}, env...), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return Start{}, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var s Start
	select {
	case t := <-next:
		s.Init = t.Sub(t0)
	case err := <-exited:
		return Start{}, fmt.Errorf("%s exited before asking for an event: %v\n%s", filepath.Base(bin), err, stderr.String())
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		return Start{}, fmt.Errorf("%s did not ask for an event within 20s\n%s", filepath.Base(bin), stderr.String())
	}
	time.Sleep(100 * time.Millisecond) // idle, waiting for the event
	s.RSSKB = rssKB(cmd.Process.Pid)
	cmd.Process.Kill()
	<-exited
	return s, nil
}

func rssKB(pid int) int {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return kb
		}
	}
	return 0
}

// PackageInit is one package's share of a binary's package initialisation.
type PackageInit struct {
	Package string
	MS      float64
	Bytes   int
}

// InitTrace runs bin once with GODEBUG=inittrace=1 (against the fake
// runtime API) and returns the package init times, largest first.
func InitTrace(ctx context.Context, bin string, env []string) ([]PackageInit, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone) // ends the runtime loop at once
	})}
	go srv.Serve(ln)
	defer srv.Close()
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin)
	cmd.Env = append(append([]string{}, env...), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run() // exits with an error when the fake refuses; the trace is what we want
	byPkg := map[string]*PackageInit{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		f := strings.Fields(line)
		// init <pkg> @<t> ms, <ms> ms clock, <bytes> bytes, <allocs> allocs
		if len(f) < 8 || f[0] != "init" {
			continue
		}
		ms, _ := strconv.ParseFloat(f[4], 64)
		b, _ := strconv.Atoi(f[7])
		p := byPkg[f[1]]
		if p == nil {
			p = &PackageInit{Package: f[1]}
			byPkg[f[1]] = p
		}
		p.MS += ms
		p.Bytes += b
	}
	var out []PackageInit
	for _, p := range byPkg {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MS > out[j].MS })
	return out, nil
}

// PackageSize is the bytes of symbols a package contributes to a binary.
type PackageSize struct {
	Package string
	Bytes   int64
}

// SizeByPackage attributes an unstripped binary's code and data symbols to
// packages (go tool nm -size), largest first. Runtime metadata (pclntab,
// type links) is not attributed and is roughly proportional to code size.
func SizeByPackage(ctx context.Context, bin string) ([]PackageSize, int64, error) {
	out, err := exec.CommandContext(ctx, "go", "tool", "nm", "-size", bin).Output()
	if err != nil {
		return nil, 0, fmt.Errorf("go tool nm %s: %w", bin, err)
	}
	st, err := os.Stat(bin)
	if err != nil {
		return nil, 0, err
	}
	by := map[string]int64{}
	var total int64
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		switch f[2] {
		case "T", "t", "R", "r", "D", "d":
		default:
			continue // bss and undefined take no file space
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || size > st.Size() {
			continue // zero-filled data (FIPS DRBG's 32 MB buffer) is not in the file
		}
		pkg := symbolPackage(strings.Join(f[3:], " "))
		by[pkg] += size
		total += size
	}
	var ps []PackageSize
	for k, v := range by {
		ps = append(ps, PackageSize{k, v})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].Bytes > ps[j].Bytes })
	return ps, total, nil
}

// symbolPackage maps a symbol name to its package path, grouping SDK
// sub-packages (schemas, types, internal/endpoints) under their service.
func symbolPackage(name string) string {
	for _, p := range []string{"type:.eq.", "type:.hash.", "type:", "go:itab.", "go:"} {
		name = strings.TrimPrefix(name, p)
	}
	name = strings.TrimLeft(name, "*")
	head, tail := "", name
	if i := strings.LastIndex(name, "/"); i >= 0 {
		head, tail = name[:i+1], name[i+1:]
	}
	if i := strings.Index(tail, "."); i >= 0 {
		tail = tail[:i]
	}
	pkg := head + tail
	const svc = "github.com/aws/aws-sdk-go-v2/service/"
	if rest, ok := strings.CutPrefix(pkg, svc); ok {
		pkg = svc + strings.SplitN(rest, "/", 2)[0] + " (all)"
	}
	return pkg
}
