package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hookledger/hookledger/internal/inject"
)

// crashPoints are every step boundary of every function, the handler's
// steps included (inside the at-most-once notify step: after its started
// mark and after its effect), with the range of
// N (HOOKLEDGER_CRASH=name:N) to draw from: points hit on every request get
// a wider range, so crashes land at different moments.
var crashPoints = []struct {
	name string
	maxN int
}{
	{inject.ReceiverAfterVerify, 40},
	{inject.ReceiverAfterRecord, 30},
	{inject.ReceiverAfterPayload, 30},
	{inject.ReceiverAfterEnqueue, 30},
	{inject.ProcessorAfterClaim, 15},
	{inject.StepRan("charge"), 15},
	{inject.StepStarted("notify"), 15},
	{inject.StepRan("notify"), 15},
	{inject.ProcessorAfterEffect, 15},
	{inject.ProcessorAfterDone, 15},
	{inject.ReclaimerAfterReset, 2},
}

// fleet supervises the phase's `hooklab dev` processes: it restarts one
// after it exits (as Lambda starts a fresh environment after a crash),
// arms crash points in crash phases, and counts what the processes report
// (crash points fired, AWS faults injected).
type fleet struct {
	bin     string
	env     []string
	args    []string
	log     io.Writer
	logMu   sync.Mutex
	crash   bool         // arm crash points
	rotate  atomic.Int64 // nanoseconds: kill a process whose armed point has not fired by then (0: never)
	seed    uint64
	maxN    int                  // caps N, so that short runs crash too (0: no cap)
	envOf   func(i int) []string // a process's own variables, by its index (nil: none; they win)
	workers []*worker

	mu       sync.Mutex
	rng      *rand.Rand
	fired    map[string]int // crash point -> times fired
	armed    map[string]int // crash point -> processes armed with it now
	faults   map[string]int // injected fault -> count
	kills    int
	unwanted []string // unexpected exits
	starts   int

	stopped atomic.Bool
	wg      sync.WaitGroup
}

type worker struct {
	idx  int
	addr string
	mu   sync.Mutex
	cmd  *exec.Cmd
	spec string // armed crash point name:N, or ""
	born time.Time
	// exited is closed once this start of the process has exited.
	exited chan struct{}
	// killing says the harness killed this start on purpose (kill).
	killing bool
}

// Workers keep their address across restarts, so a port must stay theirs
// while their process is down. A port the kernel hands out for ":0" is an
// ephemeral one, which any outgoing connection of this machine may take as
// its local port meanwhile, and which another phase's worker may be given
// once it is free again: a restarted worker then fails to bind, and its
// deliveries reach another phase's receiver (401). So workers take ports
// below Linux's ephemeral range, each at most once per process.
const (
	workerPortFirst = 20000
	workerPortLast  = 32000 // below the default ephemeral range (32768-60999)
)

var workerPorts struct {
	sync.Mutex
	taken map[int]bool
	next  int
}

// freeAddr returns a loopback address with a port nobody listens on now,
// below the ephemeral range, and never one this process handed out before.
func freeAddr() (string, error) {
	workerPorts.Lock()
	defer workerPorts.Unlock()
	if workerPorts.taken == nil {
		workerPorts.taken = map[int]bool{}
		workerPorts.next = workerPortFirst + int(time.Now().UnixNano()%int64(workerPortLast-workerPortFirst))
	}
	for range workerPortLast - workerPortFirst {
		port := workerPorts.next
		workerPorts.next++
		if workerPorts.next >= workerPortLast {
			workerPorts.next = workerPortFirst
		}
		if workerPorts.taken[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // someone else's
		}
		ln.Close()
		workerPorts.taken[port] = true
		return ln.Addr().String(), nil
	}
	return "", fmt.Errorf("no free port between %d and %d", workerPortFirst, workerPortLast)
}

func (f *fleet) start(ctx context.Context, n int) error {
	f.rng = rand.New(rand.NewPCG(f.seed, 0x666c656574))
	f.fired, f.armed, f.faults = map[string]int{}, map[string]int{}, map[string]int{}
	for range n {
		addr, err := freeAddr()
		if err != nil {
			return err
		}
		f.workers = append(f.workers, &worker{idx: len(f.workers), addr: addr})
	}
	for _, w := range f.workers {
		if err := f.launch(w); err != nil {
			return err
		}
	}
	for _, w := range f.workers {
		if err := waitHealthy(ctx, "http://"+w.addr+"/healthz"); err != nil {
			return err
		}
	}
	for _, w := range f.workers {
		f.wg.Go(func() { f.supervise(ctx, w) })
	}
	return nil
}

// addrs are the processes' receiver addresses.
func (f *fleet) addrs() []string {
	out := make([]string, len(f.workers))
	for i, w := range f.workers {
		out[i] = w.addr
	}
	return out
}

// nextSpec picks the crash point armed least so far (fired or armed now),
// and an N for it.
func (f *fleet) nextSpec() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	best, bestScore := -1, 0
	for i, p := range crashPoints {
		score := f.fired[p.name] + 2*f.armed[p.name]
		if best < 0 || score < bestScore || score == bestScore && f.rng.IntN(2) == 0 {
			best, bestScore = i, score
		}
	}
	p := crashPoints[best]
	f.armed[p.name]++
	n := p.maxN
	if f.maxN > 0 {
		n = min(n, f.maxN)
	}
	return fmt.Sprintf("%s:%d", p.name, 1+f.rng.IntN(n))
}

func (f *fleet) disarm(spec string) {
	if spec == "" {
		return
	}
	name, _, _ := strings.Cut(spec, ":")
	f.mu.Lock()
	f.armed[name]--
	f.mu.Unlock()
}

func (f *fleet) launch(w *worker) error {
	env := append([]string{}, f.env...)
	f.mu.Lock()
	f.starts++
	start := f.starts
	f.mu.Unlock()
	spec := ""
	if f.crash {
		spec = f.nextSpec()
		env = append(env, "HOOKLEDGER_CRASH="+spec)
	}
	if f.envOf != nil {
		env = append(env, f.envOf(w.idx)...) // later entries win
	}
	for i, e := range env {
		// Each start draws its own fault sequence, reproducibly.
		if v, ok := strings.CutPrefix(e, "HOOKLEDGER_FAULTS="); ok {
			env[i] = fmt.Sprintf("HOOKLEDGER_FAULTS=%s,seed=%d", v, f.seed+uint64(start))
		}
	}
	cmd := exec.Command(f.bin, append([]string{"dev", "--addr", w.addr}, f.args...)...)
	cmd.Env = env
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		f.disarm(spec)
		return fmt.Errorf("start %s dev: %w", f.bin, err)
	}
	pw.Close()
	go f.scan(pr, w.addr)
	w.mu.Lock()
	w.cmd, w.spec, w.born, w.exited, w.killing = cmd, spec, time.Now(), make(chan struct{}), false
	w.mu.Unlock()
	return nil
}

// current is the start of worker i that runs now, and the channel closed
// when it exits.
func (f *fleet) current(i int) (*exec.Cmd, chan struct{}) {
	w := f.workers[i]
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cmd, w.exited
}

// kill kills that start of worker i with SIGKILL, as a crash at an
// arbitrary instruction, and returns once it has exited (at most 10 s).
// The supervisor counts it as a kill and starts the process again.
func (f *fleet) kill(i int, cmd *exec.Cmd, exited chan struct{}) {
	w := f.workers[i]
	w.mu.Lock()
	if w.cmd == cmd {
		w.killing = true
		cmd.Process.Signal(syscall.SIGKILL)
	}
	w.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// scan copies a process's output to the phase log and counts what it
// reports.
func (f *fleet) scan(r io.ReadCloser, addr string) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "fault: injected "); ok {
			kind, _, _ := strings.Cut(rest, " ")
			f.mu.Lock()
			f.faults[kind]++
			f.mu.Unlock()
			continue // counted, not logged: there are thousands
		}
		if rest, ok := strings.CutPrefix(line, "crashpoint: crashing at "); ok {
			f.mu.Lock()
			f.fired[strings.TrimSpace(rest)]++
			f.mu.Unlock()
		}
		f.logMu.Lock()
		fmt.Fprintf(f.log, "[%s] %s\n", addr, line)
		f.logMu.Unlock()
	}
}

// supervise waits for the process to exit and starts it again, until the
// fleet stops. In crash phases it also kills a process whose armed point
// has not fired within the rotation time, so every point gets its turn.
func (f *fleet) supervise(ctx context.Context, w *worker) {
	for {
		w.mu.Lock()
		cmd, spec, done := w.cmd, w.spec, w.exited
		w.mu.Unlock()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		var err error
		killed := false
		var tick <-chan time.Time
		var ticker *time.Ticker
		if d := time.Duration(f.rotate.Load()); d > 0 {
			ticker = time.NewTicker(d)
			tick = ticker.C
		}
	wait:
		for {
			select {
			case err = <-exited:
				break wait
			case <-tick:
				if f.rotate.Load() > 0 && !f.stopped.Load() && !killed {
					killed = true
					cmd.Process.Signal(syscall.SIGKILL)
				}
			}
		}
		if ticker != nil {
			ticker.Stop()
		}
		close(done)
		w.mu.Lock()
		killed = killed || w.killing
		w.mu.Unlock()
		f.disarm(spec)
		if f.stopped.Load() || ctx.Err() != nil {
			return
		}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee) && ee.ExitCode() == inject.CrashExitCode:
			// counted from the process's own line
		case killed:
			f.mu.Lock()
			f.kills++
			f.mu.Unlock()
		default:
			f.mu.Lock()
			f.unwanted = append(f.unwanted, fmt.Sprintf("dev on %s exited unexpectedly: %v", w.addr, err))
			f.mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
		for {
			if err := f.launch(w); err == nil {
				break
			} else if f.stopped.Load() || ctx.Err() != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// stopRotating keeps armed points armed but stops killing processes whose
// point has not fired (the sending is over; let the pipeline settle).
func (f *fleet) stopRotating() { f.rotate.Store(0) }

// stop ends every process (SIGTERM, then SIGKILL) and waits for the
// supervisors.
func (f *fleet) stop() {
	f.stopped.Store(true)
	for _, w := range f.workers {
		w.mu.Lock()
		cmd := w.cmd
		w.mu.Unlock()
		if cmd != nil && cmd.Process != nil {
			cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		for _, w := range f.workers {
			w.mu.Lock()
			if w.cmd != nil && w.cmd.Process != nil {
				w.cmd.Process.Kill()
			}
			w.mu.Unlock()
		}
		<-done
	}
}

func (f *fleet) snapshot() (fired, faults map[string]int, kills int, unwanted []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fired, faults = map[string]int{}, map[string]int{}
	for k, v := range f.fired {
		fired[k] = v
	}
	for k, v := range f.faults {
		faults[k] = v
	}
	return fired, faults, f.kills, append([]string(nil), f.unwanted...)
}

func waitHealthy(ctx context.Context, u string) error {
	client := &http.Client{Timeout: time.Second}
	for i := 0; ; i++ {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if i > 300 {
			return fmt.Errorf("dev process did not come up at %s within 30s; see the phase log", u)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
