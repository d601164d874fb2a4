package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/ociimage"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/internal/unpack"
	"github.com/coldstart-go/coldstart/prober"
)

// Phases the runc launcher adds, from T0, before process_started.
const (
	PhaseBundleReady = "bundle_ready" // config.json written, stdio files open
	PhaseCreated     = "created"      // `runc create` returned: namespaces, cgroup, mounts ready
)

// ErrNoRuntime is returned when a container runtime is missing or has no
// working engine behind it. The message says how to install or start it.
var ErrNoRuntime = errors.New("container runtime not available")

// Runc launches servers as OCI containers with runc: Spec.Path is an image
// (an OCI image layout directory or an image tarball, as the image arm writes
// them), unpacked once per image into a root filesystem that every instance
// then shares read-only. Each instance gets its own bundle directory
// (config.json, stdout, stderr) keyed by Spec.ID, and runs with the host's
// network (no network namespace), so a server's 127.0.0.1 port is reachable;
// a Unix socket's directory is bind-mounted instead. Spec.Args replace the
// image's Cmd after its Entrypoint (as with docker run); Spec.Env follows the
// image's Env, then PORT; Spec.Dir is not used (the image's WorkingDir is).
// The container's exit status is not known (init is not our child): Err
// quotes its stderr instead.
//
// Call Close when done: it removes the unpacked root filesystems.
type Runc struct {
	// Binary is the runtime's executable ("" = "runc" from PATH): runc,
	// or another with runc's command line (create --bundle --pid-file
	// [--no-pivot], start, kill, delete --force, --root), such as crun.
	Binary string
	// Root is runc's state directory, --root ("" = runc's default,
	// /run/runc, which `runc list` shows).
	Root string
	// WorkDir holds the bundles and unpacked root filesystems ("" =
	// os.TempDir()).
	WorkDir string
	// Grace is how long Stop waits after SIGTERM before SIGKILL (0 = 2 s).
	Grace time.Duration
	// NoPivot passes --no-pivot to runc create: where the host's root
	// is an initramfs, pivot_root fails (EINVAL) and runc must move the
	// rootfs over / and chroot instead, as Docker's DOCKER_RAMDISK does.
	// A chroot is escapable where pivot_root is not: use it only there.
	// A root that is the initramfs itself is found and gets --no-pivot
	// without it.
	NoPivot bool

	mu     sync.Mutex
	rootfs map[string]*Rootfs // by image path and its index/manifest stamp
	closed bool
}

var _ Launcher = (*Runc)(nil)

// Rootfs is one image unpacked for runc.
type Rootfs struct {
	// Image is the image path it came from; Digest its manifest digest.
	Image  string
	Digest string
	// Dir is the unpacked root filesystem (shared, mounted read-only).
	Dir string
	// Config is the image's config: entrypoint, cmd, env, user, workdir.
	Config v1.Config
	// UnpackMs is how long loading and unpacking took, in milliseconds. It
	// happens once per image, before any instance's T0 (like an image pull
	// on a node: not part of a cold start here).
	UnpackMs float64
	// Bytes is the unpacked size of the regular files.
	Bytes int64

	forget func() // drops it from the run's state file once removed
}

// ociVersion is the runtime spec version config.json declares: the newest
// that Debian's crun 1.8 accepts (it refuses 1.2 and later as "unknown
// version specified"); runc takes any 1.x. The config uses nothing newer.
const ociVersion = "1.1.0"

// runcInstall is what to do when runc is missing; other runtimes are
// Debian packages of their own names.
const runcInstall = "install it: apt-get install runc, or sudo scripts/setup.sh"

// Check returns ErrNoRuntime, with the install command, when the runc binary
// cannot be found; callers can use it to drop the image arm early and let
// the others proceed.
func (r *Runc) Check() error {
	if _, err := r.binary(); err != nil {
		return err
	}
	if r.Name() == "crun" {
		return crunHierarchy("/sys/fs/cgroup/unified/cgroup.controllers")
	}
	return nil
}

// crunHierarchy refuses a cgroup v1 hybrid host whose v2 hierarchy (its
// cgroup.controllers file, controllers) has controllers: crun refuses
// to create a container there ("cgroups in hybrid mode not supported"),
// and says so only once per start. A pure v1 or v2 host has no such file
// or an empty one. The error gives the way out that needs no reboot: a v1
// hierarchy of its own for each such controller (a controller no v2
// cgroup enables can move), which coldstart does not do itself, since it
// changes the host for everything else on it.
func crunHierarchy(controllers string) error {
	b, err := os.ReadFile(controllers)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return nil
	}
	held := strings.Fields(string(b))
	var mounts []string
	for _, c := range held {
		d := "/sys/fs/cgroup/" + c
		mounts = append(mounts, fmt.Sprintf("mkdir %s && mount -t cgroup -o %s cgroup %s", d, c, d))
	}
	return fmt.Errorf("%w: crun: this host mixes cgroup v1 and v2, and its v2 hierarchy holds controllers (%s: %s), which crun refuses; measure crun on a cgroup v2 host (or a pure v1 one), or, as root, give each a v1 hierarchy of its own for the measurement (%s; umount and rmdir after)",
		ErrNoRuntime, controllers, strings.Join(held, " "), strings.Join(mounts, "; "))
}

func (r *Runc) binary() (string, error) {
	if n := r.Name(); n != "runc" {
		return lookTool(r.Binary, n, ErrNoRuntime, "install it: apt-get install "+n)
	}
	return lookTool(r.Binary, "runc", ErrNoRuntime, runcInstall)
}

// Name is the runtime's name, as errors and state directories give it:
// the base name of Binary, "runc" when unset.
func (r *Runc) Name() string {
	if r.Binary == "" {
		return "runc"
	}
	return filepath.Base(r.Binary)
}

// lookTool finds the binary name (def when "") on PATH, or returns kind
// naming it and how to install it.
func lookTool(name, def string, kind error, install string) (string, error) {
	if name == "" {
		name = def
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %s not found (%v); %s", kind, def, name, err, install)
	}
	return p, nil
}

func (r *Runc) workDir() string {
	if r.WorkDir != "" {
		return r.WorkDir
	}
	return os.TempDir()
}

// stateRoot is runc's --root: Root; else, when not root, runc's own
// rootless choice $XDG_RUNTIME_DIR/runc where that is set, and a
// directory of this user's in the temp directory where not (runc would
// use /run/runc, which only root may write); else runc's default.
func (r *Runc) stateRoot() string {
	if r.Root != "" || os.Geteuid() == 0 {
		return r.Root
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, r.Name())
	}
	return filepath.Join(os.TempDir(), r.Name()+"-"+strconv.Itoa(os.Geteuid()))
}

func (r *Runc) grace() time.Duration {
	if r.Grace > 0 {
		return r.Grace
	}
	return 2 * time.Second
}

// Prepare loads and unpacks the image at path, once: later calls for an
// unchanged image return the same Rootfs.
func (r *Runc) Prepare(ctx context.Context, path string) (*Rootfs, error) {
	stamp, err := ociimage.Stamp(path)
	if err != nil {
		return nil, fmt.Errorf("prepare image %s: %w", path, err)
	}
	key := path + "\x00" + stamp
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, fmt.Errorf("prepare image %s: runc launcher closed", path)
	}
	if fs, ok := r.rootfs[key]; ok {
		return fs, nil
	}
	start := time.Now()
	img, err := ociimage.Load(path)
	if err != nil {
		return nil, fmt.Errorf("prepare image: %w", err)
	}
	d, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("prepare image %s: %w", path, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("prepare image %s: config: %w", path, err)
	}
	if cf.OS != "" && cf.OS != "linux" {
		return nil, fmt.Errorf("prepare image %s: image is for %s, not linux", path, cf.OS)
	}
	// The layers are untrusted: internal/unpack keeps every entry inside
	// the rootfs. The rootfs (0755, so the image's user can reach into it
	// once it is the container's /) sits in a directory only root enters
	// (0700), so no host user reaches the image's files, set-id binaries
	// included. That directory is named here, not by MkdirTemp, so that it
	// is in the run's state file before it exists.
	top := filepath.Join(r.workDir(), "coldstart-rootfs-"+d.Hex[:12]+"-"+budget.NewID())
	forget, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Dir, Path: top})
	if err != nil {
		return nil, fmt.Errorf("prepare image %s: %w", path, err)
	}
	if err := os.Mkdir(top, 0o700); err != nil {
		forget()
		return nil, fmt.Errorf("prepare image %s: %w", path, err)
	}
	dir := filepath.Join(top, "rootfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		os.RemoveAll(top)
		return nil, fmt.Errorf("prepare image %s: %w", path, err)
	}
	st, err := unpack.Image(ctx, dir, img, unpack.Options{})
	if err != nil {
		os.RemoveAll(top)
		return nil, fmt.Errorf("prepare image %s: unpack into %s: %w", path, dir, err)
	}
	fs := &Rootfs{Image: path, Digest: d.String(), Dir: dir, Config: cf.Config, Bytes: st.Bytes, UnpackMs: ms(time.Since(start)), forget: forget}
	if r.rootfs == nil {
		r.rootfs = map[string]*Rootfs{}
	}
	r.rootfs[key] = fs
	return fs, nil
}

// Close removes the unpacked root filesystems. Instances still running
// keep theirs mounted until they stop; stop them first.
func (r *Runc) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	var errs []error
	for k, fs := range r.rootfs {
		if err := os.RemoveAll(filepath.Dir(fs.Dir)); err != nil {
			errs = append(errs, fmt.Errorf("remove rootfs %s: %w", fs.Dir, err))
		} else if fs.forget != nil {
			fs.forget()
		}
		delete(r.rootfs, k)
	}
	return errors.Join(errs...)
}

// Launch starts s.Path (an image) as container s.ID: T0, then the bundle
// (bundle_ready), `runc create` (created), `runc start` (process_started).
// The container's stdout and stderr go to files in the bundle; the tail of
// stderr is quoted in errors. The image is unpacked before T0 (see Prepare).
func (r *Runc) Launch(ctx context.Context, s Spec) (Instance, error) {
	bin, err := r.binary()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	if s.ID == "" {
		s.ID = budget.NewID()
	}
	fs, err := r.Prepare(ctx, s.Path)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	if s.Target.Network == "unix" {
		if err := socketDirFor(fs, s); err != nil {
			return nil, fmt.Errorf("start %s: %w", s.Arm, err)
		}
	}
	c := &container{
		arm: s.Arm, id: s.ID, runc: bin, root: r.stateRoot(), grace: r.grace(), log: s.Log, noPivot: r.NoPivot || rootIsInitramfs("/proc/self/mountinfo"),
		bundle: filepath.Join(r.workDir(), s.ID),
		done:   make(chan struct{}), cleaned: make(chan struct{}),
		procRoot: "/proc", cgroupRoot: "/sys/fs/cgroup", pidfd: -1,
	}
	// The bundle and the container go into the run's state file before
	// they exist: a coldstart killed with SIGKILL leaves a record by which
	// the next run deletes them.
	forgetBundle, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Dir, Path: c.bundle})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	forgetContainer, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Container, ID: c.id, Root: c.root, Runc: c.runc})
	if err != nil {
		forgetBundle()
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	c.forget = func(deleted, removed bool) {
		if deleted {
			forgetContainer()
		}
		if removed {
			forgetBundle()
		}
	}
	c.t0 = time.Now()
	if err := c.launch(ctx, s, fs); err != nil {
		c.cleanup()
		return nil, fmt.Errorf("start %s (image %s, container %s): %w", s.Arm, s.Path, s.ID, err)
	}
	return c, nil
}

// container is one runc container: an Instance.
type container struct {
	arm, id, runc, root, bundle string
	grace                       time.Duration
	noPivot                     bool
	log                         io.Writer
	procRoot, cgroupRoot        string

	t0                            time.Time
	bundleReady, created, started time.Duration
	pid                           int
	pidfd                         int
	stderrPath                    string
	cg                            cgroupOf

	done    chan struct{}
	mu      sync.Mutex
	err     error
	stopped bool

	cleanOnce sync.Once
	cleaned   chan struct{}
	cleanErr  error
	forget    func(deleted, removed bool) // drops them from the run's state file
}

func (c *container) launch(ctx context.Context, s Spec, fs *Rootfs) error {
	if err := os.Mkdir(c.bundle, 0o700); err != nil {
		return fmt.Errorf("make bundle: %w", err)
	}
	spec, err := runtimeSpec(s, fs)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(spec, "", "\t")
	if err != nil {
		return fmt.Errorf("encode config.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(c.bundle, "config.json"), b, 0o600); err != nil {
		return fmt.Errorf("write config.json: %w", err)
	}
	stdout, err := os.Create(filepath.Join(c.bundle, "stdout"))
	if err != nil {
		return err
	}
	defer stdout.Close()
	c.stderrPath = filepath.Join(c.bundle, "stderr")
	stderr, err := os.Create(c.stderrPath)
	if err != nil {
		return err
	}
	defer stderr.Close()
	c.bundleReady = time.Since(c.t0)

	// runc create: the container's init waits on its exec fifo. Its stdio
	// are these files, never pipes: a detached container keeps them open,
	// and a pipe would keep Wait from returning.
	pidFile := filepath.Join(c.bundle, "pid")
	args := []string{"create", "--bundle", c.bundle, "--pid-file", pidFile}
	if c.noPivot {
		args = append(args, "--no-pivot")
	}
	create := c.cmd(append(args, c.id)...)
	create.Stdout, create.Stderr = stdout, stderr
	// Its own process group, so a Ctrl-C at the terminal reaches coldstart
	// alone and coldstart stops the container in order.
	create.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := runCreate(create, s); err != nil {
		return fmt.Errorf("%s create: %v%s", filepath.Base(c.runc), err, c.stderrTail())
	}
	c.created = time.Since(c.t0)
	pb, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("read %s pid file: %w", filepath.Base(c.runc), err)
	}
	if c.pid, err = strconv.Atoi(strings.TrimSpace(string(pb))); err != nil {
		return fmt.Errorf("parse %s pid file %q: %w", filepath.Base(c.runc), pb, err)
	}
	// A pidfd tells us when init exits, though it is not our child (runc
	// create has exited and init was reparented).
	if c.pidfd, err = unix.PidfdOpen(c.pid, 0); err != nil {
		c.pidfd = -1
	}
	watching := false
	defer func() {
		if !watching && c.pidfd >= 0 {
			unix.Close(c.pidfd)
		}
	}()
	c.cg = findCgroups(c.procRoot, c.cgroupRoot, c.pid)
	if err := ctx.Err(); err != nil {
		return err
	}
	start := c.cmd("start", c.id)
	var startErr TailBuffer
	startErr.Max = 4096
	start.Stderr = &startErr
	if err := start.Run(); err != nil {
		return fmt.Errorf("%s start: %v%s%s", filepath.Base(c.runc), err, startErr.Quote(), c.stderrTail())
	}
	c.started = time.Since(c.t0)
	watching = true
	go c.watch()
	return nil
}

// runCreate runs `runc create`. Rootless, a CPU set is no cgroup's but
// the affinity runc create starts with, which runc's init and so the
// server inherit (see rootless).
func runCreate(create *exec.Cmd, s Spec) error {
	if os.Geteuid() == 0 || len(s.Budget.CPUs) == 0 {
		return create.Run()
	}
	pl, err := budget.Budget{CPUs: s.Budget.CPUs}.Place(s.ID)
	if err != nil {
		return err
	}
	defer pl.Close()
	if err := pl.Start(create); err != nil {
		return err
	}
	return create.Wait()
}

// cmd is a runc command line, printed to the log when there is one.
func (c *container) cmd(args ...string) *exec.Cmd {
	if c.root != "" {
		args = append([]string{"--root", c.root}, args...)
	}
	if c.log != nil {
		fmt.Fprintf(c.log, "+ %s\n", shellQuote(append([]string{c.runc}, args...)))
	}
	return exec.Command(c.runc, args...)
}

// watch waits for init to exit, records why, and removes the container.
func (c *container) watch() {
	if c.pidfd >= 0 {
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(c.pidfd), Events: unix.POLLIN}}, -1)
			if err == nil || !errors.Is(err, unix.EINTR) {
				break
			}
		}
		unix.Close(c.pidfd)
	} else {
		// No pidfd: poll. Signal 0 fails once the process is gone; a zombie
		// still "exists", so check its state too.
		for (procfs.Proc{Root: c.procRoot}).Alive(c.pid) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The exit status belongs to init's parent, not to us: the stderr tail
	// says why it ended.
	err := fmt.Errorf("%w: %s: container %s exited%s", ErrExited, c.arm, c.id, c.stderrTail())
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
	close(c.done)
	c.cleanup()
}

func (c *container) PID() int              { return c.pid }
func (c *container) T0() time.Time         { return c.t0 }
func (c *container) Done() <-chan struct{} { return c.done }

func (c *container) Phases() []prober.Phase {
	return []prober.Phase{
		{Name: PhaseBundleReady, Ms: ms(c.bundleReady)},
		{Name: PhaseCreated, Ms: ms(c.created)},
		{Name: prober.PhaseStarted, Ms: ms(c.started)},
	}
}

func (c *container) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stop sends SIGTERM to the container, SIGKILL after the grace period (or at
// once when ctx ends), then deletes the container and its bundle. Cleanup
// runs to the end even when ctx is already cancelled (Ctrl-C).
func (c *container) Stop(ctx context.Context) error {
	c.mu.Lock()
	again := c.stopped
	c.stopped = true
	c.mu.Unlock()
	if !again {
		select {
		case <-c.done:
		default:
			_ = c.cmd("kill", c.id, "TERM").Run()
			t := time.NewTimer(c.grace)
			select {
			case <-c.done:
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			select {
			case <-c.done:
			default:
				_ = c.cmd("kill", c.id, "KILL").Run()
				k := time.NewTimer(5 * time.Second)
				select {
				case <-c.done:
				case <-k.C:
				}
				k.Stop()
			}
		}
	}
	c.cleanup()
	<-c.cleaned
	return c.cleanErr
}

// cleanup deletes the container (forced: it may still run when a launch
// failed half way) and removes its bundle, once.
func (c *container) cleanup() {
	c.cleanOnce.Do(func() {
		defer close(c.cleaned)
		var errs []error
		deleted, removed := true, true
		out, err := c.cmd("delete", "--force", c.id).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "does not exist") {
			deleted = false
			errs = append(errs, fmt.Errorf("%s delete %s: %v: %s", filepath.Base(c.runc), c.id, err, strings.TrimSpace(string(out))))
		}
		if err := os.RemoveAll(c.bundle); err != nil {
			removed = false
			errs = append(errs, fmt.Errorf("remove bundle %s: %w", c.bundle, err))
		}
		if c.forget != nil {
			c.forget(deleted, removed)
		}
		c.cleanErr = errors.Join(errs...)
	})
}

// stderrTail quotes the end of the container's stderr file ("" if empty).
func (c *container) stderrTail() string {
	if c.stderrPath == "" {
		return ""
	}
	f, err := os.Open(c.stderrPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 4096
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(fi.Size()-max, io.SeekStart)
	}
	t := &TailBuffer{Max: max}
	_, _ = io.Copy(t, f)
	return t.Quote()
}

// cgroupOf is one process's cgroup, found from /proc/PID/cgroup while it
// runs, so that Usage can read it after.
type cgroupOf struct {
	fs procfs.CgroupFS
	cg procfs.Cgroup
}

func findCgroups(procRoot, cgroupRoot string, pid int) cgroupOf {
	m, _ := procfs.Proc{Root: procRoot}.Cgroups(pid)
	return cgroupOf{fs: procfs.CgroupFS{Root: cgroupRoot}, cg: procfs.CgroupOf(m)}
}

// usage reads the cgroup (see procfs.CgroupFS.Usage): zero when the
// process had none we could find, and once the cgroup is gone.
func (c cgroupOf) usage() budget.Usage {
	if c.cg.IsZero() {
		return budget.Usage{}
	}
	u, err := c.fs.Usage(c.cg)
	if err != nil {
		return budget.Usage{}
	}
	return u
}

// Usage reads the container's cgroup (see cgroupOf.usage): zero after the
// container is deleted, which happens as soon as it exits.
func (c *container) Usage() (budget.Usage, error) { return c.cg.usage(), nil }

// runtimeSpec is the container's config.json: the image's process on a
// read-only root, host network, runc's default mounts and masks, and the
// budget as cgroup resources.
func runtimeSpec(s Spec, fs *Rootfs) (*specs.Spec, error) {
	ic := fs.Config
	args := append([]string{}, ic.Entrypoint...)
	if len(s.Args) > 0 {
		args = append(args, s.Args...) // arguments replace the image's Cmd, as with docker run
	} else {
		args = append(args, ic.Cmd...)
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("image %s has no entrypoint or cmd, and no arguments were given", fs.Image)
	}
	env := append([]string{}, ic.Env...)
	if !hasEnv(env, "PATH") {
		env = append(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	}
	env = append(env, s.Env...)
	if p := s.Target.Port(); p != "" {
		env = append(env, "PORT="+p)
	}
	user, err := imageUser(fs.Dir, ic.User)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		// Only this user's own uid and gid are mapped, as container 0
		// (runc's init must become root in the user namespace): the
		// image's user is not mapped without subordinate ids.
		user = specs.User{}
	}
	cwd := ic.WorkingDir
	if cwd == "" {
		cwd = "/"
	}
	caps := []string{"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"}
	spec := &specs.Spec{
		Version: ociVersion,
		Process: &specs.Process{
			User: user, Args: args, Env: env, Cwd: cwd,
			Capabilities:    &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps},
			Rlimits:         []specs.POSIXRlimit{nofile()},
			NoNewPrivileges: true,
		},
		Root:     &specs.Root{Path: fs.Dir, Readonly: true},
		Hostname: "",
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
			{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
			// A writable /tmp, as most servers expect one.
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=65536k"}},
		},
		Linux: &specs.Linux{
			// Relative: below coldstart's own cgroup in each hierarchy, keyed
			// by the instance id (absolute under a group's); runc delete
			// removes it.
			CgroupsPath: cgroupsPath(s),
			Resources:   resources(s.Budget),
			// No network namespace: the host's network.
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.MountNamespace},
			},
			MaskedPaths:   []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	if s.Target.Network == "unix" {
		dir := filepath.Dir(s.Target.Address)
		spec.Mounts = append(spec.Mounts, specs.Mount{Destination: dir, Type: "bind", Source: dir, Options: []string{"rbind", "rw"}})
	}
	if os.Geteuid() != 0 {
		if err := rootless(spec, s); err != nil {
			return nil, err
		}
	}
	return spec, nil
}

// rootless makes spec one runc runs without root, as `runc spec
// --rootless` does: a user namespace mapping this user's uid and gid to
// the container's 0, /sys bind-mounted (a fresh sysfs needs a network
// namespace of our own; the container has the host's), no gid= on
// devpts (gid 5 is not mapped). Cgroups: in a subtree delegated to this
// user when there is one (budget.DelegatedParent), given to runc by its
// absolute path, with the budget's quota and memory limit; else none,
// which runc's rootless mode accepts only with no cgroupsPath and no
// resources. A budget with a quota or memory limit then fails with why;
// a CPU set alone is the affinity runc create is started with
// (cpusetOnCreate), so never a cpuset write.
func rootless(spec *specs.Spec, s Spec) error {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
	spec.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: uid, Size: 1}}
	spec.Linux.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: gid, Size: 1}}
	for i, m := range spec.Mounts {
		switch {
		case m.Destination == "/sys":
			spec.Mounts[i] = specs.Mount{Destination: "/sys", Type: "none", Source: "/sys", Options: []string{"rbind", "nosuid", "noexec", "nodev", "ro"}}
		case m.Type == "devpts":
			spec.Mounts[i].Options = slices.DeleteFunc(slices.Clone(m.Options), func(o string) bool { return strings.HasPrefix(o, "gid=") })
		}
	}
	b := s.Budget
	b.CPUs = nil // the affinity of runc create, not a cpuset
	spec.Linux.CgroupsPath, spec.Linux.Resources = "", nil
	parent, err := budget.DelegatedParent(b)
	switch {
	case err == nil:
		spec.Linux.CgroupsPath = path.Join(parent, s.ID)
		if b.NeedsCgroup() {
			spec.Linux.Resources = resources(b)
			spec.Linux.Resources.Devices = nil // runc's rootless mode writes no devices cgroup
		}
	case b.NeedsCgroup():
		return fmt.Errorf("rootless runc: %w", err)
	}
	return nil
}

// nofile is the open-files limit: containerd's soft 1024, hard 524288, the
// hard limit capped at ours (runc cannot raise it above its own).
func nofile() specs.POSIXRlimit {
	l := specs.POSIXRlimit{Type: "RLIMIT_NOFILE", Soft: 1024, Hard: 524288}
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &cur); err == nil && cur.Max < l.Hard {
		l.Hard = cur.Max
	}
	if l.Soft > l.Hard {
		l.Soft = l.Hard
	}
	return l
}

// socketDirFor lets the image's user create the Unix socket: the socket's
// directory is bind-mounted into the container, and a root-owned directory
// that others cannot write (a fresh os.MkdirTemp, 0700) is handed to that
// user. The prober, as root, still reaches the socket.
func socketDirFor(fs *Rootfs, s Spec) error {
	dir := filepath.Dir(s.Target.Address)
	u, err := imageUser(fs.Dir, fs.Config.User)
	if err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil // rootless: the container's user is this one
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || u.UID == 0 || st.Uid == u.UID || fi.Mode().Perm()&0o002 != 0 {
		return nil
	}
	if st.Uid != uint32(os.Geteuid()) {
		return fmt.Errorf("socket directory %s: owned by uid %d and not writable by the image's user %d: make it writable (chmod 1777) or use TCP", dir, st.Uid, u.UID)
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ chown %d:%d %s\n", u.UID, u.GID, dir)
	}
	if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
		return fmt.Errorf("socket directory %s: hand it to the image's user: %w", dir, err)
	}
	return nil
}

// cgroupsPath is where runc makes the container's cgroup: s.ID below
// coldstart's own cgroup, or below a group's (an absolute path from each
// hierarchy's root, where budget.Group made it in every one).
func cgroupsPath(s Spec) string {
	if s.Group != nil {
		return path.Join(s.Group.Path(), s.ID)
	}
	return s.ID
}

// resources turns a budget into cgroup settings runc writes.
func resources(b budget.Budget) *specs.LinuxResources {
	r := &specs.LinuxResources{
		Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}, // runc adds the standard devices
	}
	if b.Cores > 0 || len(b.CPUs) > 0 {
		r.CPU = &specs.LinuxCPU{}
		if b.Cores > 0 {
			quota, period := b.CFSQuota()
			r.CPU.Period, r.CPU.Quota = &period, &quota
		}
		if len(b.CPUs) > 0 {
			r.CPU.Cpus = budget.FormatCPUList(b.CPUs)
		}
	}
	if b.MemBytes > 0 {
		lim := b.MemBytes
		r.Memory = &specs.LinuxMemory{Limit: &lim}
	}
	return r
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// imageUser resolves an image's User ("", "uid", "uid:gid", "name",
// "name:group") against the rootfs's /etc/passwd and /etc/group.
func imageUser(rootfs, u string) (specs.User, error) {
	if u == "" {
		return specs.User{}, nil
	}
	user, group, hasGroup := strings.Cut(u, ":")
	var out specs.User
	if n, err := strconv.ParseUint(user, 10, 32); err == nil {
		out.UID = uint32(n)
	} else {
		uid, gid, ok := lookupID(rootfs, "etc/passwd", user)
		if !ok {
			return out, fmt.Errorf("image user %q: not numeric and not in the image's /etc/passwd", u)
		}
		out.UID, out.GID = uid, gid
	}
	if hasGroup {
		if n, err := strconv.ParseUint(group, 10, 32); err == nil {
			out.GID = uint32(n)
		} else {
			gid, _, ok := lookupID(rootfs, "etc/group", group)
			if !ok {
				return out, fmt.Errorf("image user %q: group %q not numeric and not in the image's /etc/group", u, group)
			}
			out.GID = gid
		}
	}
	return out, nil
}

// lookupID finds name in the image's passwd (name:x:uid:gid:...) or
// group (name:x:gid:...) file, returning the third and fourth fields.
func lookupID(rootfs, file, name string) (uint32, uint32, bool) {
	b, err := unpack.ReadFile(rootfs, file) // resolved inside the image: it may hold symlinks to host paths
	if err != nil {
		return 0, 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Split(l, ":")
		if len(f) < 3 || f[0] != name {
			continue
		}
		a, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return 0, 0, false
		}
		var g uint64
		if len(f) > 3 {
			g, _ = strconv.ParseUint(f[3], 10, 32)
		}
		return uint32(a), uint32(g), true
	}
	return 0, 0, false
}

// rootIsInitramfs reports whether / is the kernel's initial rootfs, the
// one mount pivot_root cannot move (mountinfo, the file that lists this
// process's mounts, says so with the filesystem type "rootfs"): only
// there is --no-pivot needed.
func rootIsInitramfs(mountinfo string) bool {
	b, err := os.ReadFile(mountinfo)
	if err != nil {
		return false
	}
	root := false
	for _, line := range strings.Split(string(b), "\n") {
		// id parent major:minor root mountpoint options... - fstype source super
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || f[4] != "/" {
			continue
		}
		// The last mount at / is the one seen.
		root = strings.HasPrefix(post, "rootfs ")
	}
	return root
}
