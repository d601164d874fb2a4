package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/ociimage"
	"github.com/coldstart-go/coldstart/prober"
)

// Engine launches servers with a container engine's command line, `docker
// run` or `podman run`, as an alternative to Runc when the user asks for it
// and an engine works here. Spec.Path is an image as for Runc; it is loaded
// into the engine once per image, before T0. The container runs with the
// host network and a read-only root, with the budget as --cpus,
// --cpuset-cpus and --memory. Phases: process_started is when `run -d`
// returned (the engine has created and started the container).
//
// Each container is named by the Spec's ID and recorded by that name in the
// run's state file (internal/leftovers) before `run`, so that one a
// SIGKILLed coldstart leaves is removed by the next run or `coldstart
// clean`, like a runc container.
type Engine struct {
	// Name is "docker" or "podman".
	Name string
	// Binary is the CLI ("" = Name from PATH).
	Binary string
	// Grace is how long Stop lets the server shut down before SIGKILL (0 =
	// 2 s; whole seconds, as the engines take it).
	Grace time.Duration

	mu      sync.Mutex
	checked bool
	loaded  map[string]string // image path and stamp -> the engine's image reference
}

var _ Launcher = (*Engine)(nil)

// NewEngine returns the launcher for engine "docker" or "podman".
func NewEngine(engine string) (*Engine, error) {
	switch engine {
	case "docker", "podman":
		return &Engine{Name: engine}, nil
	}
	return nil, fmt.Errorf("container engine %q: want docker or podman", engine)
}

func (e *Engine) bin() string {
	if e.Binary != "" {
		return e.Binary
	}
	return e.Name
}

// Check returns ErrNoRuntime, saying what is wrong and what to use instead,
// unless the engine's CLI is installed and `ENGINE info` succeeds (for
// docker: a daemon answers).
func (e *Engine) Check(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.checkLocked(ctx)
}

func (e *Engine) checkLocked(ctx context.Context) error {
	if e.checked {
		return nil
	}
	bin, err := exec.LookPath(e.bin())
	if err != nil {
		return fmt.Errorf("%w: %s: %s not found (%v); install it, or use the runc runtime", ErrNoRuntime, e.Name, e.bin(), err)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "info")
	tail := &TailBuffer{Max: 2048}
	cmd.Stdout, cmd.Stderr = io.Discard, tail
	if err := cmd.Run(); err != nil {
		hint := "start its daemon"
		if e.Name == "podman" {
			hint = "check `podman info`"
		}
		return fmt.Errorf("%w: %s: no working engine: `%s info` failed (%v); %s, or use the runc runtime (needs only the runc binary)%s",
			ErrNoRuntime, e.Name, e.bin(), err, hint, tail.Quote())
	}
	e.checked = true
	return nil
}

// load puts the image at path into the engine (`load -i TARBALL`) once and
// returns the name to run it by.
func (e *Engine) load(ctx context.Context, path string, log io.Writer) (string, error) {
	stamp, err := ociimage.Stamp(path)
	if err != nil {
		return "", fmt.Errorf("load image %s: %w", path, err)
	}
	key := path + "\x00" + stamp
	if ref, ok := e.loaded[key]; ok {
		return ref, nil
	}
	tb := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// An OCI layout: the engines load tarballs, so write one.
		img, err := ociimage.Load(path)
		if err != nil {
			return "", err
		}
		d, err := img.Digest()
		if err != nil {
			return "", fmt.Errorf("load image %s: %w", path, err)
		}
		tag, err := name.NewTag("coldstart/image:" + d.Hex[:12])
		if err != nil {
			return "", err
		}
		// In a directory the run's state file lists first, so that a
		// SIGKILL during the load leaves no tarball behind.
		dir, forget, err := leftovers.MkdirTemp("", "coldstart-engine-")
		if err != nil {
			return "", fmt.Errorf("load image %s: %w", path, err)
		}
		defer func() {
			if os.RemoveAll(dir) == nil {
				forget()
			}
		}()
		tb = filepath.Join(dir, "image.tar")
		if err := tarball.WriteToFile(tb, tag, img); err != nil {
			return "", fmt.Errorf("load image %s: write tarball: %w", path, err)
		}
	}
	args := []string{"load", "-i", tb}
	if log != nil {
		fmt.Fprintf(log, "+ %s\n", shellQuote(append([]string{e.bin()}, args...)))
	}
	out, err := exec.CommandContext(ctx, e.bin(), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s load -i %s: %v: %s", e.Name, tb, err, strings.TrimSpace(string(out)))
	}
	ref := loadedRef(string(out))
	if ref == "" {
		return "", fmt.Errorf("%s load -i %s: no \"Loaded image\" line in its output: %s", e.Name, tb, strings.TrimSpace(string(out)))
	}
	if e.loaded == nil {
		e.loaded = map[string]string{}
	}
	e.loaded[key] = ref
	return ref, nil
}

// loadedRef is the last image named in `docker load`/`podman load` output:
// "Loaded image: NAME:TAG", "Loaded image ID: sha256:...", or podman's
// "Loaded image(s): NAME".
func loadedRef(out string) string {
	ref := ""
	for _, l := range strings.Split(out, "\n") {
		for _, p := range []string{"Loaded image ID: ", "Loaded image(s): ", "Loaded image: "} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), p); ok {
				ref = strings.TrimSpace(strings.Split(v, ",")[0])
			}
		}
	}
	return ref
}

// runArgs is the `run` command line for s.
func (e *Engine) runArgs(s Spec, image string) []string {
	a := []string{"run", "--detach", "--name", s.ID, "--network", "host", "--read-only", "--tmpfs", "/tmp"}
	if e.Name == "podman" {
		// runc works on this cgroup layout where podman's default crun
		// does not; podman's default ulimits exceed what it may set here.
		a = append(a, "--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
	}
	// Only the names: the engine reads the values from its own
	// environment (runEnv), so they are neither in -v output nor in the
	// command line ps shows other users.
	for _, env := range s.Env {
		k, _, _ := strings.Cut(env, "=")
		a = append(a, "--env", k)
	}
	if p := s.Target.Port(); p != "" {
		a = append(a, "--env", "PORT="+p)
	}
	if s.Target.Network == "unix" {
		dir := filepath.Dir(s.Target.Address)
		a = append(a, "--volume", dir+":"+dir)
	}
	if b := s.Budget; b.Cores > 0 {
		a = append(a, "--cpus", strconv.FormatFloat(b.Cores, 'f', -1, 64))
	}
	if len(s.Budget.CPUs) > 0 {
		cs := make([]string, len(s.Budget.CPUs))
		for i, c := range s.Budget.CPUs {
			cs[i] = strconv.Itoa(c)
		}
		a = append(a, "--cpuset-cpus", strings.Join(cs, ","))
	}
	if s.Budget.MemBytes > 0 {
		a = append(a, "--memory", strconv.FormatInt(s.Budget.MemBytes, 10)+"b")
	}
	a = append(a, image)
	return append(a, s.Args...)
}

// Launch starts s.Path (an image) as container s.ID with `ENGINE run`.
func (e *Engine) Launch(ctx context.Context, s Spec) (Instance, error) {
	e.mu.Lock()
	if err := e.checkLocked(ctx); err != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	image, err := e.load(ctx, s.Path, s.Log)
	e.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	if s.ID == "" {
		s.ID = budget.NewID()
	}
	grace := e.Grace
	if grace <= 0 {
		grace = 2 * time.Second
	}
	c := &engineContainer{arm: s.Arm, id: s.ID, engine: e.Name, bin: e.bin(), log: s.Log, grace: grace, done: make(chan struct{})}
	// The container goes into the run's state file, by the exact name it
	// is about to get, before it exists; remove forgets it once removed.
	abs, err := exec.LookPath(c.bin)
	if err == nil {
		abs, err = filepath.Abs(abs)
	}
	if err != nil {
		return nil, fmt.Errorf("start %s: %s: %w", s.Arm, c.bin, err)
	}
	if c.forget, err = leftovers.Add(leftovers.Entry{Kind: leftovers.EngineContainer, ID: s.ID, Engine: abs}); err != nil {
		return nil, fmt.Errorf("start %s: record container %s: %w", s.Arm, s.ID, err)
	}
	args := e.runArgs(s, image)
	if c.log != nil {
		fmt.Fprintf(c.log, "+ %s\n", shellQuote(append([]string{c.bin}, args...)))
	}
	run := exec.Command(c.bin, args...)
	run.Env = append(os.Environ(), s.Env...)
	tail := &TailBuffer{Max: 4096}
	run.Stdout, run.Stderr = io.Discard, tail
	c.t0 = time.Now()
	if err := run.Run(); err != nil {
		c.remove()
		return nil, fmt.Errorf("start %s: %s run: %v%s", s.Arm, e.Name, err, tail.Quote())
	}
	c.started = time.Since(c.t0)
	out, err := exec.Command(c.bin, "inspect", "--format", "{{.State.Pid}}", s.ID).Output()
	if err == nil {
		c.pid, err = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if err != nil || c.pid <= 0 {
		c.remove()
		return nil, fmt.Errorf("start %s: %s inspect %s: pid %q: %v", s.Arm, e.Name, s.ID, out, err)
	}
	c.cg = findCgroups("/proc", "/sys/fs/cgroup", c.pid)
	// `ENGINE wait` returns when the container exits, with its exit code.
	wait := exec.Command(c.bin, "wait", s.ID)
	var code strings.Builder
	wait.Stdout = &code
	if err := wait.Start(); err != nil {
		c.remove()
		return nil, fmt.Errorf("start %s: %s wait: %w", s.Arm, e.Name, err)
	}
	go func() {
		werr := wait.Wait()
		logs, _ := exec.Command(c.bin, "logs", "--tail", "40", s.ID).CombinedOutput()
		t := &TailBuffer{Max: 4096}
		t.Write(logs)
		status := strings.TrimSpace(code.String())
		if werr != nil {
			status = werr.Error()
		}
		c.mu.Lock()
		c.err = fmt.Errorf("%w: %s: container %s exited (status %s)%s", ErrExited, s.Arm, s.ID, status, t.Quote())
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

type engineContainer struct {
	arm, id, engine, bin string
	log                  io.Writer
	grace                time.Duration
	t0                   time.Time
	started              time.Duration
	pid                  int
	cg                   cgroupOf
	done                 chan struct{}
	forget               func() // drops the state file's record of the container

	mu       sync.Mutex
	err      error
	stopOnce sync.Once
	stopErr  error
}

func (c *engineContainer) PID() int              { return c.pid }
func (c *engineContainer) T0() time.Time         { return c.t0 }
func (c *engineContainer) Done() <-chan struct{} { return c.done }
func (c *engineContainer) Phases() []prober.Phase {
	return []prober.Phase{{Name: prober.PhaseStarted, Ms: ms(c.started)}}
}
func (c *engineContainer) Usage() (budget.Usage, error) { return c.cg.usage(), nil }

func (c *engineContainer) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stop runs `ENGINE stop` (SIGTERM, SIGKILL after the grace period; at once
// when ctx has ended) and removes the container, also when ctx is
// cancelled.
func (c *engineContainer) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		secs := int((c.grace + time.Second - 1) / time.Second)
		if ctx.Err() != nil {
			secs = 0
		}
		select {
		case <-c.done:
		default:
			_ = c.command("stop", "--time", strconv.Itoa(secs), c.id).Run()
		}
		c.stopErr = c.remove()
		t := time.NewTimer(10 * time.Second)
		defer t.Stop()
		select {
		case <-c.done:
		case <-t.C:
			c.stopErr = errors.Join(c.stopErr, fmt.Errorf("%s wait %s: no exit 10 s after removal", c.engine, c.id))
		}
	})
	return c.stopErr
}

// remove removes the container (gone already is fine) and then forgets
// its record; a container it could not remove stays recorded, for a
// sweep.
func (c *engineContainer) remove() error {
	out, err := c.command("rm", "--force", c.id).CombinedOutput()
	if err != nil && !strings.Contains(strings.ToLower(string(out)), "no such container") {
		return fmt.Errorf("%s rm %s: %v: %s", c.engine, c.id, err, strings.TrimSpace(string(out)))
	}
	c.forget()
	return nil
}

func (c *engineContainer) command(args ...string) *exec.Cmd {
	if c.log != nil {
		fmt.Fprintf(c.log, "+ %s\n", shellQuote(append([]string{c.bin}, args...)))
	}
	return exec.Command(c.bin, args...)
}
