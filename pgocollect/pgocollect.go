// Package pgocollect collects the CPU profile a pgo arm is built with: it
// starts the server (the default arm built with the debug hook) with its
// own arguments and environment, keeps it busy with steady's load
// generator (Echo, or the user's method) or the user's load command, and
// fetches a CPU profile from its debug listener. builds calls it through
// builds.Options.CollectProfile, so builds itself runs nothing it builds.
package pgocollect

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/steady"
)

// Load is the default load the profile is taken under: loadWorkers
// goroutines over one connection calling Echo with a loadPayload-byte
// payload (health checks when the server has no Echo service), or the
// user's method (Config.Call).
const (
	loadWorkers = 4
	loadPayload = 64
)

var _ builds.ProfileCollector = Collect

// Collect runs bin with no arguments, loads it with Echo calls (health
// checks without Echo) and fetches a secs-long CPU profile from its debug
// listener ($COLDSTART_DEBUG_ADDR). Spawned command lines go to log (nil
// = nowhere).
func Collect(ctx context.Context, bin builds.Artifact, secs int, log io.Writer) ([]byte, builds.ProfileNote, error) {
	return Config{}.collect(ctx, bin, secs, log)
}

// CollectWith is Collect with the server started by l (launch.AsUser: as
// the user the measured servers run as).
func CollectWith(l launch.Launcher) builds.ProfileCollector {
	return Config{Launcher: l}.Collector()
}

// Config is how the profile's server is started and what loads it: a
// profile describes the hot path only when the server runs as it is
// measured (its arguments, environment, user and directory) under the
// user's own traffic. Its errors about a setting are steady.OptionErrors
// naming the field at fault ("Command", "Call.Method"), so that a front
// end can name its flag.
type Config struct {
	// Launcher starts the server (nil = a plain process).
	Launcher launch.Launcher
	// Args is the server's argument template: {addr}, {host}, {port},
	// {socket} and the other prober.Placeholders are filled for the
	// instance ({tmpdir} must be filled before). A template that names
	// {socket} makes the server listen on a Unix socket.
	Args []string
	// Env is extra environment, K=V, with the placeholders of Args.
	Env []string
	// Dir is the server's working directory ("" = ours).
	Dir string
	// Call is the user's method to load the server with (nil = Echo).
	Call *steady.Call
	// Command is a shell command (sh -c) that loads the server instead of
	// coldstart's client ("" = none; not with Call). Its {addr}, {host},
	// {port} and {socket} are the server's address. It starts once the
	// server is ready and is stopped (its process group killed) when the
	// profile is fetched; exiting non-zero before that fails the
	// collection with the tail of its output.
	Command string
}

// Collector is the builds.ProfileCollector that collects under c.
func (c Config) Collector() builds.ProfileCollector { return c.collect }

// Check reports what is wrong with c without starting anything.
func (c Config) Check() error {
	if c.Command != "" && c.Call != nil {
		return &steady.OptionError{Option: "Command", Fix: "Call", Err: errors.New("a load command beside a method to call: give one or the other")}
	}
	if _, err := prober.ParseTemplate(c.Args); err != nil {
		return err
	}
	if _, err := prober.ParseTemplate(c.Env); err != nil {
		return fmt.Errorf("server environment: %w", err)
	}
	if c.Command != "" {
		if _, err := prober.ParseTemplate([]string{c.Command}); err != nil {
			return &steady.OptionError{Option: "Command", Err: err}
		}
	}
	return nil
}

// Load says in words how c starts the server and loads it, for
// builds.Options.ProfileLoad: the progress line and the profile cache
// key. Secret values are redacted; request data and environment values
// are stood for by a short hash, so that changing them collects anew.
func (c Config) Load() string {
	var b strings.Builder
	switch {
	case c.Command != "":
		fmt.Fprintf(&b, "the command %s", redactCommand(c.Command))
	case c.Call != nil:
		fmt.Fprintf(&b, "calls of %s", c.Call.Method)
		if len(c.Call.Data) > 0 || c.Call.DataFile != "" || len(c.Call.Metadata) > 0 {
			h := sha256.New()
			for _, d := range c.Call.Data {
				fmt.Fprintf(h, "%d:%s", len(d), d)
			}
			if c.Call.DataFile != "" {
				d, _ := os.ReadFile(c.Call.DataFile)
				fmt.Fprintf(h, "file %d:%s", len(d), d)
			}
			for _, k := range slices.Sorted(maps.Keys(c.Call.Metadata)) {
				fmt.Fprintf(h, "md %q %q", k, c.Call.Metadata[k])
			}
			fmt.Fprintf(&b, " (requests %x)", h.Sum(nil)[:4])
		}
	default:
		b.WriteString("Echo calls (health checks without Echo)")
	}
	if len(c.Args) > 0 {
		fmt.Fprintf(&b, ", server args %q", redactArgs(c.Args))
	}
	if len(c.Env) > 0 {
		h := sha256.New()
		var keys []string
		for _, e := range c.Env {
			k, _, _ := strings.Cut(e, "=")
			keys = append(keys, k)
			fmt.Fprintf(h, "%d:%s", len(e), e)
		}
		fmt.Fprintf(&b, ", env %s (%x)", strings.Join(keys, ","), h.Sum(nil)[:4])
	}
	if c.Dir != "" {
		fmt.Fprintf(&b, ", in %s", c.Dir)
	}
	return b.String()
}

// redactArgs redacts the secret values of a server's arguments as
// provenance does for results.
func redactArgs(args []string) []string {
	return provenance.RedactArgs(append([]string{"--"}, args...))[1:]
}

// redactCommand redacts the secret values of a shell command, word by
// word, as provenance does for coldstart's own command line.
func redactCommand(cmd string) string {
	return strings.Join(provenance.RedactArgs(strings.Fields(cmd)), " ")
}

func (c Config) collect(ctx context.Context, bin builds.Artifact, secs int, log io.Writer) ([]byte, builds.ProfileNote, error) {
	note := builds.ProfileNote{Server: bin.Path, Package: bin.Package, Arm: "default, with the debug hook", GoVersion: bin.GoVersion,
		DurationS: float64(secs), LoadKind: "echo", ServerArgs: redactArgs(c.Args), Dir: c.Dir}
	if len(c.Args) == 0 {
		note.ServerArgs = nil
	}
	switch {
	case c.Command != "":
		note.LoadKind, note.Command = "command", redactCommand(c.Command)
	case c.Call != nil:
		note.LoadKind, note.Method = "call", c.Call.Method
	}
	if err := c.Check(); err != nil {
		return nil, note, err
	}
	tmpl, _ := prober.ParseTemplate(c.Args)
	envTmpl, _ := prober.ParseTemplate(c.Env)
	tcp, err := prober.FreeTCP()
	if err != nil {
		return nil, note, err
	}
	target := tcp
	if tmpl.UsesSocket() {
		sock, remove, err := launch.SocketTarget("cs-")
		if err != nil {
			return nil, note, err
		}
		defer remove()
		target = sock
	}
	debug, err := otherFreeTCP(tcp)
	if err != nil {
		return nil, note, err
	}
	vars, err := tmpl.VarsFor(target)
	if err != nil {
		return nil, note, err
	}
	args, err := tmpl.Expand(vars)
	if err != nil {
		return nil, note, err
	}
	env, err := envTmpl.Expand(prober.VarsFor(target))
	if err != nil {
		return nil, note, err
	}
	launcher := c.Launcher
	if launcher == nil {
		launcher = launch.Process{}
	}
	inst, _, err := launch.StartReady(ctx, launcher, launch.Spec{
		Arm:    "pgo-collect",
		Path:   bin.Path,
		Args:   args,
		Env:    append(env, "COLDSTART_DEBUG_ADDR="+debug.Address),
		Dir:    c.Dir,
		Target: target,
		ID:     budget.NewID(),
		Log:    log,
	}, launch.ReadyOptions{})
	if err != nil {
		return nil, note, err
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	note.Endpoint = "http://" + debug.Address + "/debug/pprof/profile?seconds=" + fmt.Sprint(secs)

	lctx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	type loaded struct {
		r   steady.LoadResult
		err error
	}
	done := make(chan loaded, 1)
	switch {
	case c.Command != "":
		ct, _ := prober.ParseTemplate([]string{c.Command})
		cmdline, err := ct.Expand(prober.VarsFor(target))
		if err != nil {
			return nil, note, &steady.OptionError{Option: "Command", Err: err}
		}
		lc, err := startCommand(lctx, cmdline[0], log)
		if err != nil {
			return nil, note, &steady.OptionError{Option: "Command", Err: err}
		}
		go func() {
			err := lc.wait()
			if err != nil && lctx.Err() == nil {
				err = &steady.OptionError{Option: "Command", Err: fmt.Errorf("exited before the profile was fetched: %w", err)}
			} else {
				err = nil // stopped when the profile was fetched, or done
			}
			done <- loaded{steady.LoadResult{Load: "the command " + note.Command}, err}
		}()
	case c.Call != nil:
		go func() {
			r, err := steady.LoadCall(lctx, target, loadWorkers, c.Call)
			done <- loaded{r, err}
		}()
	default:
		go func() {
			r, err := steady.Load(lctx, target, loadWorkers, loadPayload)
			done <- loaded{r, err}
		}()
	}
	// A load that fails at once fails the collection at once, not after
	// the profile's seconds.
	fctx, stopFetch := context.WithCancel(ctx)
	defer stopFetch()
	type fetched struct {
		b   []byte
		err error
	}
	fch := make(chan fetched, 1)
	go func() {
		b, err := fetchProfile(fctx, note.Endpoint, secs)
		fch <- fetched{b, err}
	}()
	var prof []byte
	var l loaded
	select {
	case f := <-fch:
		stopLoad()
		l = <-done
		prof, err = f.b, f.err
	case l = <-done:
		if l.err != nil {
			stopFetch()
			<-fch
			return nil, note, l.err
		}
		// The load ended early on its own (a command that exits 0): the
		// profile holds what it sent.
		f := <-fch
		prof, err = f.b, f.err
	}
	if l.err != nil {
		return nil, note, l.err
	}
	if err != nil {
		return nil, note, err
	}
	if err := builds.CheckProfile(prof); err != nil {
		if c.Command != "" {
			return nil, note, &steady.OptionError{Option: "Command", Err: fmt.Errorf("the profile from %s: %w: did the command reach the server at %s?", note.Endpoint, err, target)}
		}
		return nil, note, fmt.Errorf("fetched profile from %s: %w", note.Endpoint, err)
	}
	note.Load = l.r.Load
	if c.Call == nil && c.Command == "" && strings.Contains(note.Load, "health") {
		note.LoadKind = "health"
	}
	note.CollectedAt = time.Now().UTC().Format(time.RFC3339)
	note.Calls, note.Errors = l.r.Calls, l.r.Errors
	if l.r.Elapsed > 0 {
		note.CallsPerS = float64(note.Calls) / l.r.Elapsed.Seconds()
	}
	return prof, note, nil
}

// loadCommand is the user's load command, running.
type loadCommand struct {
	cmd  *exec.Cmd
	out  *launch.TailBuffer
	done chan error
}

// startCommand starts sh -c command in a process group of its own; the
// group is killed when ctx is done.
func startCommand(ctx context.Context, command string, log io.Writer) (*loadCommand, error) {
	if log != nil {
		fmt.Fprintf(log, "+ sh -c %q   # pgo load\n", redactCommand(command))
	}
	out := &launch.TailBuffer{Max: 2000}
	cmd := exec.Command("sh", "-c", command)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lc := &loadCommand{cmd: cmd, out: out, done: make(chan error, 1)}
	exited := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-exited:
		}
	}()
	go func() {
		err := cmd.Wait()
		close(exited)
		// Whatever of the group outlived the shell goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		lc.done <- err
	}()
	return lc, nil
}

// wait waits for the command to end; a non-zero exit says its output's
// tail.
func (lc *loadCommand) wait() error {
	err := <-lc.done
	if err == nil {
		return nil
	}
	if t := strings.TrimSpace(lc.out.String()); t != "" {
		return fmt.Errorf("%w; its output ends:\n%s", err, t)
	}
	return err
}

// otherFreeTCP picks a free port other than t's: FreeTCP closes the port
// it found, so two calls may return the same one.
func otherFreeTCP(t prober.Target) (prober.Target, error) {
	for i := 0; ; i++ {
		d, err := prober.FreeTCP()
		if err != nil || d.Address != t.Address || i == 10 {
			return d, err
		}
	}
}

// fetchProfile GETs a CPU profile, retrying briefly while the debug
// listener comes up.
func fetchProfile(ctx context.Context, url string, secs int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lastErr = err
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("fetch profile %s: %w", url, lastErr)
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("fetch profile %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			t := &launch.TailBuffer{Max: 500}
			t.Write(b)
			return nil, fmt.Errorf("fetch profile %s: %s: %s", url, resp.Status, strings.TrimSpace(t.String()))
		}
		return b, nil
	}
	return nil, fmt.Errorf("fetch profile %s: %w (is the server's debug listener on $COLDSTART_DEBUG_ADDR?)", url, lastErr)
}
