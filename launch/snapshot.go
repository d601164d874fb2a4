package launch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/procfs"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// PhaseProcessRestored is when `criu restore --restore-detached` returned
// (the phase the snapshot launcher adds; T0 is right before criu started).
const PhaseProcessRestored = record.PhaseProcessRestored

// Sentinel errors of the snapshot launcher.
var (
	// ErrNoCRIU: criu is missing or `criu check` fails on this kernel.
	ErrNoCRIU = errors.New("criu not available")
	// ErrNotDumpable: criu could not checkpoint the server; the error
	// quotes criu's reason (an unsupported socket, ...).
	ErrNotDumpable = errors.New("server cannot be checkpointed")
)

// CRIUInstall is what to do when criu is missing or too old.
const CRIUInstall = "install criu 4.2.1 or newer (sudo scripts/test-setup.sh builds it from Debian's source package)"

// CRIUEnv is what the snapshot arm adds to the server's environment: Go ≥
// 1.24 listens with MPTCP by default, which criu cannot dump ("Unsupported
// proto 262").
const CRIUEnv = "GODEBUG=multipathtcp=0"

// Snapshot checkpoints servers with CRIU so that each cold start is a
// restore. Checkpoint starts the server once (as a plain process, the first
// process of its own PID namespace and session, so that restored copies can
// run side by side with their own pids and no terminal), waits until it is
// ready, optionally warms it, and dumps it into a directory on a tmpfs it
// mounts; each Launch of the returned Checkpoint is then a `criu restore`.
type Snapshot struct {
	// CRIU is the criu executable ("" = criu from PATH).
	CRIU string
	// WorkDir is where checkpoint tmpfs mounts are made ("" =
	// os.TempDir()).
	WorkDir string
	// Grace is how long Stop waits after SIGTERM before SIGKILL (0 = 2 s).
	Grace time.Duration
	// Checker decides the server is ready before the dump (nil = Health);
	// Wait bounds that wait.
	Checker prober.Checker
	Wait    prober.WaitOptions
	// Warmup is how many readiness calls (each over a fresh connection,
	// like a probe) the server answers before it is dumped, so lazy
	// initialisation (or a JIT's work) is in the image (0 = none).
	Warmup int
	// TmpfsSize bounds each checkpoint's tmpfs (0 = 1 GiB).
	TmpfsSize int64
}

func (s *Snapshot) criu() (string, error) {
	return lookTool(s.CRIU, "criu", ErrNoCRIU, CRIUInstall)
}

// Check runs `criu check` and returns ErrNoCRIU quoting criu's output when
// criu is missing or fails on this kernel; callers can drop the snapshot arm
// early and let the others run.
func (s *Snapshot) Check(ctx context.Context) error {
	c, err := s.criu()
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, c, "check").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s check: %v: %s; %s", ErrNoCRIU, c, err, quoteLines(out, 10), CRIUInstall)
	}
	return nil
}

// KdatCacheKept reports whether criu can keep its kernel-feature cache
// (/run/criu.kdat) between runs: only when /run is a tmpfs. Without it every
// criu run probes the kernel again, which bench/criukdat measures.
func KdatCacheKept() bool {
	var st unix.Statfs_t
	return unix.Statfs("/run", &st) == nil && st.Type == unix.TMPFS_MAGIC
}

// Version is criu's version line ("Version: 4.2.1"), for provenance.
func (s *Snapshot) Version(ctx context.Context) string {
	c, err := s.criu()
	if err != nil {
		return ""
	}
	out, _ := exec.CommandContext(ctx, c, "--version").Output()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "Version:"))
}

// Checkpoint is one dumped server: restore it with Launch as often as
// needed, then Close it (which unmounts its tmpfs).
type Checkpoint struct {
	// Arm is the arm it was made from.
	Arm string
	// Target is where restored servers listen: where the dumped one did.
	Target prober.Target
	// Dir is the tmpfs mount; the images are in Dir/images.
	Dir string
	// Bytes is the images' size on disk.
	Bytes int64
	// DumpMs is how long `criu dump` took (wall clock); Stats are criu's
	// own dump statistics ("frozen_time_ms", "memory_pages_written", ...).
	DumpMs float64
	Stats  map[string]float64
	// Warmup is how many warm-up calls the server answered before the dump.
	Warmup int
	// Env is what was added to the server's environment (CRIUEnv).
	Env []string

	criu    string
	grace   time.Duration
	inherit []inheritFD

	forget func() // drops the tmpfs and its directory from the run's state file

	mu     sync.Mutex
	closed bool
}

var _ Launcher = (*Checkpoint)(nil)

// inheritFD is a pipe the dumped server held whose other end was outside
// the dump (its stderr, read by coldstart): each restore hands criu a new
// one in its place (criu --inherit-fd).
type inheritFD struct {
	fd     int    // the server's fd number
	res    string // "pipe:[INODE]"
	stderr bool
}

// Checkpoint starts s, waits until it answers, warms it and dumps it. The
// server is started without s.Budget (a checkpoint is made once, before any
// cold start); restores run in their own Spec's budget.
func (sn *Snapshot) Checkpoint(ctx context.Context, s Spec) (ck *Checkpoint, err error) {
	criu, err := sn.criu()
	if err != nil {
		return nil, err
	}
	if s.ID == "" {
		s.ID = budget.NewID()
	}
	dir, forget, err := mountTmpfs(sn.WorkDir, s.ID, sn.TmpfsSize)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", s.Arm, err)
	}
	made := &Checkpoint{Arm: s.Arm, Target: s.Target, Dir: dir, criu: criu, grace: sn.Grace, Env: []string{CRIUEnv}, forget: forget}
	ck = made
	defer func() {
		if err != nil {
			made.Close()
			ck = nil
		}
	}()
	images := filepath.Join(dir, "images")
	if err := os.Mkdir(images, 0o700); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", s.Arm, err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", s.Arm, err)
	}
	defer devnull.Close()
	src := s
	src.Budget = budget.Budget{}
	src.Env = withGODEBUG(s.Env, "multipathtcp=0")
	l := Process{Grace: sn.Grace, Prepare: func(cmd *exec.Cmd) {
		cmd.Stdout = devnull // a file, not a pipe to us
		a := cmd.SysProcAttr
		// Its own session (no terminal to dump, no --shell-job) and its
		// own PID namespace (restored copies do not fight for one pid).
		a.Setpgid, a.Setsid, a.Pdeathsig = false, true, 0
		a.Cloneflags |= syscall.CLONE_NEWPID
	}}
	checker := sn.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	inst, _, err := StartReady(ctx, l, src, ReadyOptions{Checker: checker, Wait: sn.Wait, Name: "checkpoint " + s.Arm})
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		inst.Stop(sctx)
	}()
	for i := 0; i < sn.Warmup; i++ {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		a, err := checker.Check(actx, s.Target)
		cancel()
		if err != nil || !a.Ready {
			return nil, fmt.Errorf("checkpoint %s: warm-up call %d of %d: %v%s", s.Arm, i+1, sn.Warmup, err, a.Detail)
		}
	}
	ck.Warmup = sn.Warmup
	pid := inst.PID()
	if ck.inherit, err = externalPipes(procfs.Host.Root, pid); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", s.Arm, err)
	}
	args := []string{"dump", "-t", strconv.Itoa(pid), "-D", images, "-o", "dump.log",
		"--tcp-close", "--manage-cgroups=ignore", "--display-stats"}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ %s %s\n", criu, shellQuote(args))
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, criu, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	derr := cmd.Run()
	ck.DumpMs = ms(time.Since(start))
	if derr != nil {
		return nil, fmt.Errorf("%w: %s: criu dump: %v: %s", ErrNotDumpable, s.Arm, derr, criuErrors(filepath.Join(images, "dump.log"), out.Bytes()))
	}
	ck.Stats = parseCRIUStats(out.Bytes())
	// criu dump kills the server once dumped; the deferred Stop reaps it.
	if ck.Bytes, err = imagesSize(images); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", s.Arm, err)
	}
	return ck, nil
}

// withGODEBUG adds setting to env's GODEBUG (or this process's, when env
// has none), keeping the rest.
func withGODEBUG(env []string, setting string) []string {
	cur := os.Getenv("GODEBUG")
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GODEBUG="); ok {
			cur = v
			continue
		}
		out = append(out, e)
	}
	if cur != "" {
		setting = cur + "," + setting
	}
	return append(out, "GODEBUG="+setting)
}

// mountTmpfs makes workDir/coldstart-snapshot-ID and mounts a tmpfs there,
// each recorded in the run's state file before it is made (a SIGKILLed run's
// mount is unmounted and its directory removed by the next sweep); forget
// drops both records once Close has removed them.
func mountTmpfs(workDir, id string, size int64) (dir string, forget func(), err error) {
	if workDir == "" {
		workDir = os.TempDir()
	}
	if size <= 0 {
		size = 1 << 30
	}
	dir = filepath.Join(workDir, "coldstart-snapshot-"+id)
	forgetDir, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Dir, Path: dir})
	if err != nil {
		return "", nil, fmt.Errorf("record checkpoint dir: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		forgetDir()
		return "", nil, fmt.Errorf("make checkpoint dir: %w", err)
	}
	forgetMount, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Mount, Path: dir})
	if err != nil {
		os.Remove(dir)
		forgetDir()
		return "", nil, fmt.Errorf("record checkpoint mount: %w", err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size="+strconv.FormatInt(size, 10)); err != nil {
		forgetMount()
		os.Remove(dir)
		forgetDir()
		return "", nil, fmt.Errorf("mount tmpfs on %s: %w (the snapshot arm runs as root)", dir, err)
	}
	return dir, func() { forgetMount(); forgetDir() }, nil
}

// Close unmounts the checkpoint's tmpfs and removes its directory. Stop
// restored instances first.
func (ck *Checkpoint) Close() error {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	if ck.closed {
		return nil
	}
	ck.closed = true
	if err := unix.Unmount(ck.Dir, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		// Busy (a restored server still holds a file there): detach it so
		// it goes when the last user does.
		if err2 := unix.Unmount(ck.Dir, unix.MNT_DETACH); err2 != nil {
			return fmt.Errorf("unmount %s: %w", ck.Dir, err)
		}
	}
	if err := os.Remove(ck.Dir); err != nil {
		return fmt.Errorf("remove %s: %w", ck.Dir, err)
	}
	if ck.forget != nil {
		ck.forget()
	}
	return nil
}

// Launch restores the checkpoint as a new instance in s.Budget. Only
// s.Budget, s.ID and s.Log are used: the command line, environment and
// address are those of the dumped server (Checkpoint.Target).
func (ck *Checkpoint) Launch(ctx context.Context, s Spec) (Instance, error) {
	ck.mu.Lock()
	closed := ck.closed
	ck.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("restore %s: checkpoint closed", ck.Arm)
	}
	if s.ID == "" {
		s.ID = budget.NewID()
	}
	work, err := os.MkdirTemp(ck.Dir, "restore-")
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", ck.Arm, err)
	}
	r := &restored{arm: ck.Arm, work: work, grace: ck.grace, done: make(chan struct{}), tail: &TailBuffer{Max: 4096}}
	if r.grace == 0 {
		r.grace = 2 * time.Second
	}
	stderrR, err := ck.restore(r, s)
	if err != nil {
		// The one cleanup path: release closes the placement (killing
		// what criu left in its cgroup) and the pidfd, and removes the
		// work directory.
		r.release()
		return nil, err
	}
	r.follow(stderrR)
	return r, nil
}

// restore runs criu restore for r (in a placement of s.Budget) and adopts
// the restored server. It returns the read end of the server's stderr
// pipe (nil when the dumped server had none); on error it has closed that
// pipe and r is for the caller to release.
func (ck *Checkpoint) restore(r *restored, s Spec) (*os.File, error) {
	extra, stderrR, err := ck.inheritFiles()
	if err != nil {
		return nil, fmt.Errorf("restore %s: %w", ck.Arm, err)
	}
	err = ck.runCRIU(r, s, extra)
	if err == nil {
		err = ck.adopt(r)
	}
	if err != nil {
		if stderrR != nil {
			stderrR.Close()
		}
		return nil, err
	}
	return stderrR, nil
}

// inheritFiles opens the file criu hands the restored server at each
// inherited fd (ck.InheritArgs(3)): a fresh pipe's write end for its stderr,
// whose read end is returned, and /dev/null for the others.
func (ck *Checkpoint) inheritFiles() (extra []*os.File, stderrR *os.File, err error) {
	for _, in := range ck.inherit {
		var f *os.File
		if in.stderr && stderrR == nil {
			var pr *os.File
			if pr, f, err = os.Pipe(); err == nil {
				stderrR = pr
			}
		} else {
			f, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		}
		if err != nil {
			closeFiles(extra)
			if stderrR != nil {
				stderrR.Close()
			}
			return nil, nil, err
		}
		extra = append(extra, f)
	}
	return extra, stderrR, nil
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		f.Close()
	}
}

// runCRIU places r in s.Budget and runs `criu restore` there with extra
// as its inherited fds (closed once criu holds them), recording r's T0,
// restore time, criu's CPU time and statistics.
func (ck *Checkpoint) runCRIU(r *restored, s Spec, extra []*os.File) error {
	args := append([]string{"restore", "-D", filepath.Join(ck.Dir, "images"), "-W", r.work, "-o", "restore.log",
		"--restore-detached", "--pidfile", "pid", "--tcp-close", "--manage-cgroups=ignore", "--display-stats"},
		ck.InheritArgs(3)...)
	// criu runs, and (--manage-cgroups=ignore) restores the server, in a
	// cgroup of its own even when the budget needs none, so that release
	// kills whatever the restored tree has become, as Process does.
	pl, err := s.Budget.Place(s.ID, budget.WithOwnCgroup())
	if err != nil {
		closeFiles(extra)
		return fmt.Errorf("restore %s: %w", ck.Arm, err)
	}
	r.pl = pl
	cmd := exec.Command(ck.criu, args...)
	cmd.ExtraFiles = extra
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ %s %s\n", ck.criu, shellQuote(args))
	}
	serr := pl.Start(cmd)
	closeFiles(extra) // criu holds them now; the restored server inherits the stderr pipe
	if serr != nil {
		return fmt.Errorf("restore %s: %w", ck.Arm, serr)
	}
	r.t0 = pl.Started()
	r.started = time.Since(r.t0)
	werr := cmd.Wait()
	r.restoredAt = time.Since(r.t0)
	r.criuCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	r.stats = parseCRIUStats(out.Bytes())
	if werr != nil {
		return fmt.Errorf("%w: restore %s: criu restore: %v: %s", ErrExited, ck.Arm, werr, criuErrors(filepath.Join(r.work, "restore.log"), out.Bytes()))
	}
	return nil
}

// adopt reads the restored server's pid from criu's pidfile, records it in
// the run's state file and opens a pidfd on it.
func (ck *Checkpoint) adopt(r *restored) error {
	b, err := os.ReadFile(filepath.Join(r.work, "pid"))
	if err == nil {
		r.pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if err != nil {
		return fmt.Errorf("restore %s: read criu's pidfile: %w", ck.Arm, err)
	}
	// Kept in the run's state file: the restored server is not our child
	// and outlives a SIGKILLed coldstart unless a sweep kills it.
	r.forget = recordProcess(r.pid)
	// The restored server is not our child (criu detached it): follow it
	// through a pidfd.
	if r.pidfd, err = unix.PidfdOpen(r.pid, 0); err != nil {
		_ = unix.Kill(r.pid, unix.SIGKILL)
		return fmt.Errorf("restore %s: pidfd_open %d: %w", ck.Arm, r.pid, err)
	}
	return nil
}

// follow copies the restored server's stderr (from stderrR, when there is
// one) into r's tail and, once the server has exited and the copy is done,
// sets r's error and closes r.done.
func (r *restored) follow(stderrR *os.File) {
	var copied sync.WaitGroup
	if stderrR != nil {
		copied.Add(1)
		go func() {
			defer copied.Done()
			io.Copy(r.tail, stderrR)
			stderrR.Close()
		}()
	}
	go func() {
		waitPidfd(r.pidfd)
		copied.Wait()
		r.mu.Lock()
		r.err = fmt.Errorf("%w: %s (restored pid %d)%s", ErrExited, r.arm, r.pid, r.tail.Quote())
		r.mu.Unlock()
		close(r.done)
	}()
}

// InheritArgs are criu restore's --inherit-fd arguments for the pipes the
// dumped server held whose other ends were outside the dump (its stderr
// first), numbered from fd first on: a restore hands criu a file at each of
// those fds.
func (ck *Checkpoint) InheritArgs(first int) []string {
	var args []string
	for i, in := range ck.inherit {
		args = append(args, "--inherit-fd", fmt.Sprintf("fd[%d]:%s", first+i, in.res))
	}
	return args
}

// waitPidfd blocks until the process behind fd has exited.
func waitPidfd(fd int) {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if n > 0 || err != nil {
			return
		}
	}
}

type restored struct {
	arm        string
	work       string
	grace      time.Duration
	pl         *budget.Placement
	t0         time.Time
	started    time.Duration
	restoredAt time.Duration
	criuCPU    time.Duration
	stats      map[string]float64
	pid        int
	pidfd      int
	forget     func() // drops pid from the run's state file once it is gone
	tail       *TailBuffer
	done       chan struct{}

	mu       sync.Mutex
	err      error
	once     stopOnce
	released bool
}

func (r *restored) PID() int              { return r.pid }
func (r *restored) T0() time.Time         { return r.t0 }
func (r *restored) Done() <-chan struct{} { return r.done }
func (r *restored) Phases() []prober.Phase {
	return []prober.Phase{{Name: prober.PhaseStarted, Ms: ms(r.started)}, {Name: PhaseProcessRestored, Ms: ms(r.restoredAt)}}
}

// LauncherCPU is criu restore's own CPU time (user+system); the restored
// server's CPU is read from /proc like any server's.
func (r *restored) LauncherCPU() time.Duration { return r.criuCPU }

// Stats are criu's restore statistics: restore_time_ms, forking_time_ms,
// pages_restored, ...
func (r *restored) Stats() map[string]float64 { return r.stats }

func (r *restored) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *restored) Usage() (budget.Usage, error) { return r.pl.Usage() }

// Containment says how the restored server's descendants are kept from
// outliving it: in its cgroup (ContainCgroupV1 or ContainCgroupV2), or ""
// where none could be made.
func (r *restored) Containment() string {
	return map[budget.Mode]string{budget.ModeV1: ContainCgroupV1, budget.ModeV2: ContainCgroupV2}[r.pl.Mode()]
}

// Stop sends SIGTERM (the server is pid 1 of its namespace: it gets the
// signal only when it handles it), then SIGKILL after the grace period,
// waits until it is gone and removes its restore directory.
func (r *restored) Stop(ctx context.Context) error {
	r.once.stop(ctx, r.done, r.grace, r.release,
		func() { _ = unix.PidfdSendSignal(r.pidfd, unix.SIGTERM, nil, 0) },
		func() { _ = unix.PidfdSendSignal(r.pidfd, unix.SIGKILL, nil, 0) })
	return nil
}

func (r *restored) release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.released {
		return
	}
	r.released = true
	if r.pidfd > 0 {
		unix.Close(r.pidfd)
	}
	if r.forget != nil {
		// release runs once the server is gone (Stop waited for it) or
		// was never followed; a Stop that timed out keeps it recorded.
		select {
		case <-r.done:
			r.forget()
		default:
		}
	}
	if r.pl != nil {
		r.pl.Close()
	}
	os.RemoveAll(r.work)
}

// externalPipes lists pid's file descriptors that are pipes: criu restores
// a pipe whose other end was outside the dump only if it is handed one.
// fd 2 is the server's stderr (a pipe to coldstart's stderr tail).
func externalPipes(procRoot string, pid int) ([]inheritFD, error) {
	dir := fmt.Sprintf("%s/%d/fd", procRoot, pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list fds: %w", err)
	}
	var out []inheritFD
	for _, e := range ents {
		l, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(l, "pipe:[") {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		out = append(out, inheritFD{fd: fd, res: l, stderr: fd == 2})
	}
	// The stderr pipe first, so it gets the fresh pipe.
	for i := range out {
		if out[i].stderr {
			out[0], out[i] = out[i], out[0]
		}
	}
	return out, nil
}

var statLine = regexp.MustCompile(`^([A-Za-z][A-Za-z ]*[a-z]): (\d+)( us| \(0x[0-9a-f]+\))?$`)

// parseCRIUStats reads --display-stats output ("Restore time: 27439 us",
// "Pages restored: 461 (0x1cd)") into snake_case keys, times in ms.
func parseCRIUStats(out []byte) map[string]float64 {
	st := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := statLine.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		k := strings.ToLower(strings.ReplaceAll(m[1], " ", "_"))
		if m[3] == " us" {
			k, v = k+"_ms", v/1000
		}
		st[k] = v
	}
	if len(st) == 0 {
		return nil
	}
	return st
}

// criuErrors quotes the "Error" lines of a criu log (or, when there are
// none, the tail of its output): what criu says went wrong. The
// RLIMIT_NOFILE complaint criu prints on every run here is left out.
func criuErrors(logPath string, out []byte) string {
	var lines []string
	if b, err := os.ReadFile(logPath); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Error") && !strings.Contains(l, "RLIMIT_NOFILE") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
	}
	if len(lines) == 0 {
		return quoteLines(out, 10)
	}
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}

func quoteLines(b []byte, n int) string {
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, "\n")
}

func imagesSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasSuffix(p, ".log") {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
