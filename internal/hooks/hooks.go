// Package hooks runs the shell commands a campaign is bracketed with, as
// hyperfine's --setup, --prepare and --cleanup: a setup once before the
// campaign (say, start the database the server dials), a prepare before
// every server start, outside the timed span, and a cleanup once after,
// also when the campaign failed or was interrupted. Each runs with sh -c
// in its own process group, placeholders filled, under a timeout that
// kills the whole group; a failure quotes the tail of its output.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/runas"
)

// The hooks, by their flags' names.
const (
	Setup   = "setup"
	Prepare = "prepare"
	Cleanup = "cleanup"
)

// TimeoutFlag is the flag that bounds every hook, named when one times out.
const TimeoutFlag = "--hook-timeout"

// Placeholders are the names a hook's command may use, in braces: every
// hook has {tmpdir}, the campaign's own temporary directory (the server's
// arguments and --env values may name it too); a prepare also has the
// start's {arm} and the address the server is about to be given, {addr},
// {host} and {port}, or {socket}, as the server's arguments have them.
var Placeholders = map[string][]string{
	Setup:   {"tmpdir"},
	Prepare: {"tmpdir", "arm", "addr", "host", "port", "socket"},
	Cleanup: {"tmpdir"},
}

// placeholder matches {name}, as prober's templates do: braces around
// anything else (a shell's ${VAR}, {a,b}) are left alone, except that
// ${name} is the shell's, not ours.
var placeholder = regexp.MustCompile(`(\$?)\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Check refuses a placeholder the hook does not fill, naming the hook's
// flag and the ones it has.
func Check(hook, command string) error {
	known := Placeholders[hook]
	for _, m := range placeholder.FindAllStringSubmatch(command, -1) {
		if m[1] == "" && !slices.Contains(known, m[2]) {
			return fmt.Errorf("--%s: unknown placeholder {%s} (known: {%s})", hook, m[2], strings.Join(known, "}, {"))
		}
	}
	return nil
}

// Expand fills command's placeholders from vars. The values are paths and
// addresses coldstart made, without spaces or shell metacharacters, so
// they are put in as they are, unquoted.
func Expand(hook, command string, vars map[string]string) (string, error) {
	var missing string
	out := placeholder.ReplaceAllStringFunc(command, func(m string) string {
		if strings.HasPrefix(m, "$") {
			return m
		}
		name := m[1 : len(m)-1]
		v, ok := vars[name]
		if (!ok || v == "") && missing == "" {
			missing = name
		}
		return v
	})
	if missing != "" {
		return "", fmt.Errorf("--%s: no value for {%s} here", hook, missing)
	}
	return out, nil
}

// Result is one hook's run, a "hook" record in the results file. The
// command line itself is in the provenance (the command's arguments).
type Result struct {
	Hook string `json:"hook"`
	// Arm is the arm about to start, for a prepare.
	Arm        string  `json:"arm,omitempty"`
	DurationMs float64 `json:"duration_ms"`
	// Exit is the exit status; -1 when the hook was killed (its timeout,
	// an interrupt) or did not start.
	Exit  int    `json:"exit"`
	Error string `json:"error,omitempty"`
}

// tailLines and tailBytes bound the output an error quotes.
const (
	tailLines = 15
	tailBytes = 2048
)

// Run runs one hook's command (placeholders already filled) with sh -c,
// stdout and stderr to a file (not a pipe: a daemon the hook leaves
// running keeps its output without holding Run up), in a process group of
// its own, so the terminal's Ctrl-C does not reach it and a timeout or a
// cancelled ctx kills all it started that is still in the group (a daemon
// that made its own session, as pg_ctl's postmaster, is not). It gives up
// after timeout (0 = when ctx is done). log, when set, gets the command
// line first (-v). The error names the hook's flag and, on a timeout,
// TimeoutFlag, and quotes the tail of the output.
func Run(ctx context.Context, hook, command string, timeout time.Duration, log io.Writer) (Result, error) {
	res := Result{Hook: hook, Exit: -1}
	if log != nil {
		fmt.Fprintf(log, "+ sh -c %s   # --%s\n", shellQuote(command), hook)
	}
	out, err := os.CreateTemp(runas.TempDir(), "coldstart-hook-")
	if err != nil {
		return res, fmt.Errorf("--%s: %w", hook, err)
	}
	defer func() { out.Close(); os.Remove(out.Name()) }()
	hctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(hctx, "sh", "-c", command)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 2 * time.Second // then SIGKILL
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("--%s: %w", hook, err)
	}
	forget := recordGroup(cmd.Process.Pid)
	err = cmd.Wait()
	res.DurationMs = float64(time.Since(start)) / float64(time.Millisecond)
	if hctx.Err() != nil {
		// Whatever of the group outlived SIGTERM and the wait goes too.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	forget()
	if err == nil {
		res.Exit = 0
		return res, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		res.Exit = ee.ExitCode()
	}
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("--%s: %w", hook, ctx.Err())
	case hctx.Err() != nil:
		err = fmt.Errorf("--%s: killed after %v (%s)", hook, timeout, TimeoutFlag)
	default:
		err = fmt.Errorf("--%s: %w", hook, err)
	}
	if t := readTail(out); t != "" {
		err = fmt.Errorf("%w; its output ends:\n%s", err, t)
	}
	res.Error = err.Error()
	return res, err
}

// recordGroup keeps the hook's shell (its process group's leader) in the
// run's state file while it runs, so a coldstart killed by SIGKILL in the
// middle of a hook leaves nothing the next run does not kill.
func recordGroup(pid int) (forget func()) {
	st, err := procfs.Host.StartTime(pid)
	if err != nil {
		return func() {}
	}
	done, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Process, PID: pid, Start: st})
	if err != nil {
		return func() {}
	}
	return done
}

// readTail is the last lines of f's content, bounded.
func readTail(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(fi.Size()-4*tailBytes, 0)
	b := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(b, off)
	s := strings.TrimRight(string(bytes.ToValidUTF8(b[:n], []byte("?"))), "\n \t")
	lines := strings.Split(s, "\n")
	if len(lines) > tailLines {
		lines = append([]string{"..."}, lines[len(lines)-tailLines:]...)
	}
	s = strings.Join(lines, "\n")
	if len(s) > tailBytes {
		s = "..." + s[len(s)-tailBytes:]
	}
	return s
}

func shellQuote(a string) string {
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}

// Config is a campaign's hooks as the flags give them.
type Config struct {
	// Setup, Prepare and Cleanup are shell command lines, placeholders
	// unexpanded ("" = none).
	Setup, Prepare, Cleanup string
	// Timeout bounds each hook's run (TimeoutFlag; 0 = none, except that
	// a cleanup is always bounded: it also runs after an interrupt).
	Timeout time.Duration
	// TmpDir makes the campaign's {tmpdir} even without hooks (the
	// server's arguments name it).
	TmpDir bool
	// Log gets each hook's command line (-v); Record each hook's run
	// (nil = neither).
	Log    io.Writer
	Record func(Result) error
}

// Any reports whether there is a hook to run or a {tmpdir} to make.
func (c Config) Any() bool {
	return c.Setup != "" || c.Prepare != "" || c.Cleanup != "" || c.TmpDir
}

// Check refuses a placeholder a hook does not fill.
func (c Config) Check() error {
	for _, h := range []struct{ hook, cmd string }{{Setup, c.Setup}, {Prepare, c.Prepare}, {Cleanup, c.Cleanup}} {
		if err := Check(h.hook, h.cmd); err != nil {
			return err
		}
	}
	return nil
}

// defaultCleanupTimeout bounds a cleanup when Timeout does not.
const defaultCleanupTimeout = time.Minute

// Campaign is one campaign's hooks once it began: its {tmpdir} made and
// its setup run. End it once, whatever happened after Begin.
type Campaign struct {
	cfg    Config
	tmpDir string
	forget func()
	ended  bool
}

// Begin makes the campaign's temporary directory ({tmpdir}: readable
// and searchable by a server run as another user, removed by End) and
// runs the setup. When the setup fails, Begin runs the cleanup (a setup
// may have started something before it failed: the cleanup is to stop
// whatever of it is there) and removes the directory; the error is the
// setup's.
func Begin(ctx context.Context, cfg Config) (*Campaign, error) {
	c := &Campaign{cfg: cfg, forget: func() {}}
	dir, forget, err := leftovers.MkdirTemp(runas.TempDir(), "csh-")
	if err != nil {
		return nil, fmt.Errorf("make {tmpdir}: %w", err)
	}
	c.tmpDir, c.forget = dir, forget
	// 0711: a server run as another user reaches what the hooks put
	// here (a database's socket) by path, without listing the directory.
	if err := os.Chmod(dir, 0o711); err != nil {
		c.End()
		return nil, fmt.Errorf("make {tmpdir}: %w", err)
	}
	if err := c.run(ctx, Setup, "", cfg.Setup, nil, cfg.Timeout); err != nil {
		c.End()
		return nil, err
	}
	return c, nil
}

// TmpDir is the campaign's {tmpdir}.
func (c *Campaign) TmpDir() string { return c.tmpDir }

// Prepare runs the prepare hook (if any) before one start of arm, with
// vars (prober's names: addr, host, port, socket) for the address the
// server is about to be given.
func (c *Campaign) Prepare(ctx context.Context, arm string, vars map[string]string) error {
	if c == nil || c.cfg.Prepare == "" {
		return nil
	}
	return c.run(ctx, Prepare, arm, c.cfg.Prepare, vars, c.cfg.Timeout)
}

// End runs the cleanup (if any) under a fresh context, so it runs also
// when the campaign's was cancelled by an interrupt, bounded by the
// timeout (a minute when there is none), then removes {tmpdir}. Later
// calls do nothing.
func (c *Campaign) End() error {
	if c == nil || c.ended {
		return nil
	}
	c.ended = true
	var err error
	if c.cfg.Cleanup != "" {
		t := c.cfg.Timeout
		if t <= 0 {
			t = defaultCleanupTimeout
		}
		err = c.run(context.Background(), Cleanup, "", c.cfg.Cleanup, nil, t)
	}
	if rerr := os.RemoveAll(c.tmpDir); rerr != nil && err == nil {
		err = fmt.Errorf("remove {tmpdir}: %w", rerr)
	}
	c.forget()
	return err
}

func (c *Campaign) run(ctx context.Context, hook, arm, command string, vars map[string]string, timeout time.Duration) error {
	if command == "" {
		return nil
	}
	all := map[string]string{"tmpdir": c.tmpDir}
	if hook == Prepare {
		all["arm"] = arm
	}
	for k, v := range vars {
		if slices.Contains(Placeholders[hook], k) {
			all[k] = v
		}
	}
	line, err := Expand(hook, command, all)
	if err != nil {
		return err
	}
	res, err := Run(ctx, hook, line, timeout, c.cfg.Log)
	res.Arm = arm
	if c.cfg.Record != nil {
		if rerr := c.cfg.Record(res); rerr != nil && err == nil {
			err = fmt.Errorf("record --%s: %w", hook, rerr)
		}
	}
	return err
}
