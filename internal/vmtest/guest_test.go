package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/require"
)

// guestBudgetTests must pass inside the guest, not skip: the budget tests
// that show cores=, mem=, cpus=, UseCgroupFD, memory.peak, GOMAXPROCS and
// cleanup on pure cgroup v2, as root and as a user a subtree is delegated
// to.
var guestBudgetTests = []string{
	"TestCPUSet", "TestGOMAXPROCSMatchesServer", "TestGOMAXPROCSMatchesServer/cores=2.5", "TestQuotaHalfCore", "TestMemoryLimitKills",
	"TestMemoryPeakFromFirstInstruction", "TestChildInCgroupAndThreadsRestored", "TestV2CloneInto",
	"TestCleanup", "TestNotRoot", "TestCheck", "TestAccounting", "TestConcurrentPlacements",
	"TestDelegatedSubtree/max", "TestDelegatedSubtree/cores=0.5", "TestDelegatedSubtree/mem=32Mi", "TestDelegatedSubtree/outside",
}

// v1OnlyBudgetTests are about cgroup v1's several hierarchies, which a
// pure v2 guest does not have: not run there (any other skip fails).
var v1OnlyBudgetTests = []string{"TestGroupEveryHierarchy", "TestGroupsOverlap"}

// TestCgroupV2Guest boots each cached Debian kernel in pure cgroup v2 mode
// and runs the budget tests there; in the newest, also a budgeted
// `coldstart run` of the sample's default and static arms (built on the
// host, measured in the guest) and one interrupted mid-campaign.
func TestCgroupV2Guest(t *testing.T) {
	t.Parallel() // with TestGuestHangKilled
	_, kernels, busybox := guestTools(t)
	dir := t.TempDir()
	bins := buildGuestBinaries(t, dir)
	for i, k := range kernels {
		t.Run("linux-"+k.Series, func(t *testing.T) {
			if i > 0 && testing.Short() {
				t.Skip("-short: the newest kernel only")
			}
			img := filepath.Join(dir, "initramfs-"+k.Series+".cpio")
			plan := Plan{Steps: []Step{{
				Name: "budget",
				Argv: []string{"/bin/budget.test", "-test.v", "-test.count=1", "-test.timeout=5m", "-test.skip", "^(" + strings.Join(v1OnlyBudgetTests, "|") + ")$"},
				// The guest has all the budget tests need: none may skip.
				Env: []string{require.Env + "=all"},
				Dir: "/tmp", Timeout: 6 * time.Minute,
			}}}
			withRun := i == 0
			if withRun {
				plan.Steps = append(plan.Steps, coldstartSteps...)
				if bins.runc != "" {
					plan.Steps = append(plan.Steps, runcRootlessStep)
				}
				if bins.crun != "" {
					plan.Steps = append(plan.Steps, crunStep)
				}
				plan.Export = []string{"/results/*.jsonl", "/results-interrupted/*.jsonl", "/results-detach/*.jsonl", "/tmp/results-user/*.jsonl", "/results-crun/*.jsonl"}
			}
			writeInitramfs(t, img, bins, busybox, plan, withRun)
			m := Machine{Kernel: k.Path, CPUs: 4, Timeout: 14 * time.Minute, SilenceTimeout: 4 * time.Minute, Console: &lineLog{t: t}, Verbose: true}
			o, err := runGuest(t, m, img, k)
			if err != nil {
				t.Fatal(err)
			}
			if o.Info["cgroup"] != "v2" {
				t.Errorf("guest cgroup mode %q, want v2 (info %v)", o.Info["cgroup"], o.Info)
			}
			for _, ctl := range []string{"cpu", "cpuset", "memory"} {
				if !strings.Contains(","+o.Info["subtree_control"]+",", ","+ctl+",") {
					t.Errorf("guest root subtree_control %q lacks %s", o.Info["subtree_control"], ctl)
				}
			}
			checkGoTestOutput(t, o.Console, guestBudgetTests)
			if withRun {
				checkColdstartResults(t, o)
				if bins.crun != "" {
					checkCrunResults(t, o)
				}
			}
		})
	}
}

// runGuest boots img on m, and once more if the guest kernel panicked
// (ErrKernelPanic): a second panic fails the test like any error.
func runGuest(t *testing.T, m Machine, img string, k Kernel) (*Outcome, error) {
	t.Helper()
	for boot := 1; ; boot++ {
		start := time.Now()
		o, err := m.Run(context.Background(), img)
		t.Logf("guest %s (%s), boot %d: %.1fs from start to power-off", k.Series, k.Package, boot, time.Since(start).Seconds())
		if boot == 1 && errors.Is(err, ErrKernelPanic) {
			t.Logf("booting again: %v", err)
			continue
		}
		return o, err
	}
}

// userUID is the unprivileged user the coldstart-user step runs as (nobody).
const userUID = 65534

// detachMarker is the length of the sleep the detaching test server
// leaves behind in the guest: whole seconds, as any sleep takes them.
const detachMarker = "3604711"

// coldstartSteps run coldstart itself in the guest: a campaign under a
// quota and a memory limit, then one interrupted while a server runs in
// its cgroup, then one of a server that detaches a child each start,
// unconstrained and under a quota, then one as a user that is not root
// (guestinit checks after each that no cgroup and no process is left).
var coldstartSteps = []Step{
	{
		Name: "coldstart-detach",
		Argv: []string{"/bin/coldstart", "run", "--bin", "/bin/testserver", "--arms", "default",
			"--budget", "max;cores=1", "-n", "5", "--results-dir", "/results-detach", "--timeout", "2m",
			"--", "-mode", "grpc", "-detach-child", detachMarker},
		Dir: "/tmp", Timeout: 6 * time.Minute,
	},
	{
		Name: "coldstart-run",
		Argv: []string{"/bin/coldstart", "run", "--prebuilt", "/arms", "--arms", "default,static",
			"--budget", "cores=0.5;mem=64Mi", "-n", "3", "--results-dir", "/results",
			// Emulated, half a core, on a busy host: a warm-up start
			// can take tens of seconds (the first exec pages in the
			// whole binary), hence --timeout 2m.
			"--timeout", "2m"},
		Dir: "/tmp", Timeout: 6 * time.Minute,
	},
	{
		Name: "coldstart-interrupted",
		Argv: []string{"/bin/coldstart", "run", "--prebuilt", "/arms", "--arms", "default",
			"--budget", "cores=0.5,mem=64Mi", "-n", "1000", "--results-dir", "/results-interrupted", "--timeout", "2m"},
		Dir: "/tmp", Timeout: 2 * time.Minute,
		// A server is running in its cgroup under /coldstart.
		InterruptWhenPopulated: "/sys/fs/cgroup/coldstart",
		AnyExit:                true,
	},
	{
		// Not root, in a subtree delegated as systemd delegates one:
		// coldstart finds it by itself and places each server's budget
		// cgroup beside its own.
		Name: "coldstart-user",
		Argv: []string{"/bin/coldstart", "run", "--prebuilt", "/arms", "--arms", "default",
			"--budget", "cores=0.5,mem=64Mi", "-n", "3", "--results-dir", "/tmp/results-user", "--timeout", "2m"},
		Env: []string{"HOME=/tmp", "USER=nobody"},
		Dir: "/tmp", Timeout: 6 * time.Minute, User: userUID,
	},
}

// runcRootlessStep runs the image arm through the host's runc, rootless,
// as nobody in the subtree delegated to it: launch's rootlessChild, which
// fails unless runc put the container's cgroup there with the budget's
// quota and memory limit. The guest's root is its initramfs, where
// pivot_root fails: runc create --no-pivot.
var runcRootlessStep = Step{
	Name: "runc-rootless",
	Argv: []string{"/bin/launch.test", "-test.run=^$"},
	Env: []string{"COLDSTART_ROOTLESS_IMAGE=/image/echo.image.tar", "COLDSTART_ROOTLESS_BUDGET=cores=0.5,mem=64Mi",
		"COLDSTART_ROOTLESS_WANT_CGROUP=1", "COLDSTART_ROOTLESS_NO_PIVOT=1", "COLDSTART_ROOTLESS_WORK=/tmp", "HOME=/tmp", "XDG_RUNTIME_DIR=/tmp/xdg", "USER=nobody"},
	Dir: "/tmp", Timeout: 3 * time.Minute, User: userUID,
}

// crunStep measures the image arm under runc and under crun side by side,
// interleaved, in one quota: a v1 hybrid host (this project's) refuses
// crun, a pure v2 guest does not. The guest's root is its initramfs:
// both get --no-pivot without being told (launch.Runc).
var crunStep = Step{
	Name: "coldstart-crun",
	Argv: []string{"/bin/coldstart", "run", "--image", "echo=/image/echo.image.tar", "--runtime", "runc,crun",
		"--budget", "cores=1", "-n", "5", "--results-dir", "/results-crun", "--timeout", "2m"},
	Dir: "/tmp", Timeout: 6 * time.Minute,
}

// checkCrunResults checks crunStep's campaign: both runtimes' arms, every
// sample answered, in a cgroup of the budget's.
func checkCrunResults(t *testing.T, o *Outcome) {
	t.Helper()
	var data []byte
	for name, d := range o.Files {
		if strings.HasPrefix(name, "/results-crun/") {
			data = d
		}
	}
	if data == nil {
		t.Fatal("the crun step exported no results file")
	}
	samples := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var s struct {
			Kind, Arm, Error string
			MedianMs         float64 `json:"median_ms"`
			Runs             int
		}
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("crun results line %q: %v", l, err)
		}
		switch s.Kind {
		case "sample":
			if s.Error != "" {
				t.Errorf("%s sample: %s", s.Arm, s.Error)
			}
			samples[s.Arm]++
		case "summary":
			t.Logf("guest summary: %-10s runs %d  median %.1f ms", s.Arm, s.Runs, s.MedianMs)
		}
	}
	if samples["echo"] != 6 || samples["echo-crun"] != 6 {
		t.Errorf("samples per arm %v, want 6 (warm-up and 5 runs) for echo (runc) and echo-crun", samples)
	}
}

// guestTools finds qemu, the kernels and busybox, or skips (fails where
// COLDSTART_REQUIRE lists vm) saying how to get them.
func guestTools(t *testing.T) (string, []Kernel, string) {
	t.Helper()
	if testing.Short() && !require.Required(require.VM) {
		t.Skip("-short: booting a guest under TCG takes minutes")
	}
	qemu, err := LookQEMU()
	if err != nil {
		require.Skipf(t, require.VM, "%v", err)
	}
	kernels, err := Kernels(CacheDir())
	if err != nil {
		require.Skipf(t, require.VM, "%v", err)
	}
	busybox, err := Busybox(CacheDir())
	if err != nil {
		require.Skipf(t, require.VM, "%v", err)
	}
	return qemu, kernels, busybox
}

// guestBinaries are the static programs the guest runs, built on the host.
type guestBinaries struct {
	init, budgetTest string
	testserver       string // internal/testservers' multi-mode server
	coldstart        string
	arms             string // coldstart build --out-dir: echo-default, echo-static and their records
	// runc is the host's runc ("" = none), launchTest the launch tests
	// and image the static arm as an image tarball, for the image arm
	// through rootless runc.
	runc, launchTest, image string
	// crun is the host's crun ("" = none), run on the same image.
	crun string
}

// buildGuestBinaries builds the guest's /init and the budget tests as
// static binaries (CGO_ENABLED=0) into dir.
func buildGuestBinaries(t *testing.T, dir string) guestBinaries {
	t.Helper()
	b := guestBinaries{init: filepath.Join(dir, "init"), budgetTest: filepath.Join(dir, "budget.test")}
	goCmd(t, "build", "-o", b.init, "./internal/vmtest/guestinit")
	goCmd(t, "test", "-c", "-o", b.budgetTest, "./budget")
	b.testserver = filepath.Join(dir, "testserver")
	goCmd(t, "build", "-o", b.testserver, "./internal/testservers/testserver")
	// coldstart as the rest of the suite builds it (cgo on: its compiled
	// packages are in the build cache already, where a CGO_ENABLED=0 build
	// would compile every dependency again); AddBinary brings libc along.
	b.coldstart = filepath.Join(dir, "coldstart")
	// -buildvcs=auto: the results' provenance names the commit (the guest
	// has no git to ask), also where GOFLAGS turns stamping off.
	goCmdEnv(t, nil, "build", "-buildvcs=auto", "-o", b.coldstart, "./cmd/coldstart")
	// The arms as coldstart builds them (the default arm with cgo, as users
	// get it: AddBinary brings its libc along), cached across runs.
	b.arms = filepath.Join(dir, "arms")
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(b.coldstart, "build", "-q", "--arms", "default,static", "--out-dir", b.arms)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("coldstart build: %v\n%s", err, out)
	}
	if p, err := exec.LookPath("runc"); err == nil {
		b.runc = p
		b.launchTest = filepath.Join(dir, "launch.test")
		goCmd(t, "test", "-c", "-o", b.launchTest, "./launch")
		img, err := builds.BuildImage(context.Background(), builds.Artifact{Arm: "static", Path: filepath.Join(b.arms, "echo-static")}, builds.ImageOptions{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		b.image = img.Tarball
		if p, err := exec.LookPath("crun"); err == nil {
			b.crun = p
		} else if require.Required(require.Crun) {
			t.Fatalf("crun not installed (sudo scripts/test-setup.sh installs it): %v", err)
		}
	}
	return b
}

// goCmd runs the go command in the module's root with cgo off, so that
// what it builds is static.
func goCmd(t *testing.T, args ...string) {
	t.Helper()
	goCmdEnv(t, []string{"CGO_ENABLED=0"}, args...)
}

// goCmdEnv runs the go command in the module's root with env added.
func goCmdEnv(t *testing.T, env []string, args ...string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	t.Logf("go %s: %.1fs", strings.Join(args, " "), time.Since(start).Seconds())
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(mod), nil
}

// busyboxApplets are the commands the budget tests start as children.
var busyboxApplets = []string{"sh", "true", "grep", "sleep", "cat", "ls", "find"}

func writeInitramfs(t *testing.T, file string, b guestBinaries, busybox string, plan Plan, withColdstart bool) {
	t.Helper()
	r := NewInitramfs()
	add := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	add(r.AddFile("/init", b.init, 0o755))
	add(r.AddFile("/bin/budget.test", b.budgetTest, 0o755))
	add(r.AddFile("/bin/busybox", busybox, 0o755))
	for _, a := range busyboxApplets {
		add(r.AddSymlink("/bin/"+a, "busybox"))
	}
	if withColdstart {
		add(r.AddBinary("/bin/coldstart", b.coldstart))
		add(r.AddFile("/bin/testserver", b.testserver, 0o755))
		for _, arm := range []string{"default", "static"} {
			add(r.AddBinary("/arms/echo-"+arm, filepath.Join(b.arms, "echo-"+arm)))
			add(r.AddFile("/arms/echo-"+arm+".json", filepath.Join(b.arms, "echo-"+arm+".json"), 0o644))
		}
		if b.runc != "" {
			add(r.AddBinary("/bin/runc", b.runc))
			add(r.AddFile("/bin/launch.test", b.launchTest, 0o755))
			add(r.AddFile("/image/echo.image.tar", b.image, 0o644))
		}
		if b.crun != "" {
			add(r.AddBinary("/bin/crun", b.crun))
		}
	}
	raw, err := json.Marshal(plan)
	add(err)
	add(r.AddData(PlanPath, raw, 0o644))
	add(r.WriteFile(file))
}

var goTestResult = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+)`)

// checkGoTestOutput checks that every test in must passed in the guest's
// `go test -v` output, and that nothing was skipped: on the guest every
// budget test has what it needs.
func checkGoTestOutput(t *testing.T, console []byte, must []string) {
	t.Helper()
	status := map[string]string{}
	for _, l := range strings.Split(string(console), "\n") {
		if m := goTestResult.FindStringSubmatch(l); m != nil {
			status[m[2]] = m[1]
			if m[1] == "SKIP" {
				t.Errorf("guest skipped %s: every budget test should run on pure cgroup v2", m[2])
			}
		}
	}
	for _, name := range must {
		if status[name] != "PASS" {
			t.Errorf("guest: %s %q, want PASS", name, status[name])
		}
	}
}

// lineLog streams the guest's console into the test log, line by line.
type lineLog struct{ t *testing.T }

func (l *lineLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// checkColdstartResults reads the results files the guest copied out: the
// campaign's summaries (one per arm and budget, figures from the cgroup),
// and the interrupted campaign's samples on disk. With
// COLDSTART_VM_RESULTS set, the files are also saved there.
func checkColdstartResults(t *testing.T, o *Outcome) {
	t.Helper()
	var runFile, intFile, detachFile, userFile []byte
	for name, data := range o.Files {
		switch {
		case strings.HasPrefix(name, "/results/"):
			runFile = data
		case strings.HasPrefix(name, "/results-interrupted/"):
			intFile = data
		case strings.HasPrefix(name, "/results-detach/"):
			detachFile = data
		case strings.HasPrefix(name, "/tmp/results-user/"):
			userFile = data
		}
		if d := os.Getenv("COLDSTART_VM_RESULTS"); d != "" {
			dst := filepath.Join(d, strings.TrimSuffix(filepath.Base(name), ".jsonl")+"_vm-"+o.Info["kernel"]+".jsonl")
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				t.Error(err)
			}
			t.Logf("guest %s saved as %s", name, dst)
		}
	}
	if runFile == nil || intFile == nil || detachFile == nil || userFile == nil {
		t.Fatalf("guest exported %d files, want the four results files", len(o.Files))
	}
	type summary struct {
		Kind        string  `json:"kind"`
		Arm         string  `json:"arm"`
		Budget      string  `json:"budget"`
		Runs        int     `json:"runs"`
		MedianMs    float64 `json:"median_ms"`
		MinMs       float64 `json:"min_ms"`
		MaxMs       float64 `json:"max_ms"`
		CgroupCPUMs float64 `json:"cgroup_cpu_ms"`
		MemPeak     int64   `json:"cgroup_mem_peak_bytes"`
		GOMAXPROCS  int     `json:"gomaxprocs_predicted"`
		Error       string  `json:"error"`
		Containment string  `json:"containment"`
		Kernel      string  `json:"kernel"`
		CgroupMode  string  `json:"cgroup_mode"`
		Commit      string  `json:"commit"`
		Host        string  `json:"host"`
		CPUModel    string  `json:"cpu_model"`
	}
	records := func(data []byte) []summary {
		var out []summary
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var s summary
			if err := json.Unmarshal([]byte(l), &s); err != nil {
				t.Fatalf("results line %q: %v", l, err)
			}
			out = append(out, s)
		}
		return out
	}
	got := map[string]summary{}
	for _, s := range records(runFile) {
		switch s.Kind {
		case "provenance":
			if s.Kernel != o.Info["kernel"] || s.CgroupMode != "v2" {
				t.Errorf("results provenance: kernel %q, cgroup mode %q; want the guest's %q, v2", s.Kernel, s.CgroupMode, o.Info["kernel"])
			}
			t.Logf("guest results provenance: commit %s, host %s, kernel %s, cgroup %s, CPU %s", s.Commit, s.Host, s.Kernel, s.CgroupMode, s.CPUModel)
		case "summary":
			got[s.Arm+" "+s.Budget] = s
			t.Logf("guest summary: %-8s %-10s runs %d  median %.1f ms (%.1f..%.1f)  cgroup CPU %.1f ms  memory peak %d B  GOMAXPROCS %d",
				s.Arm, s.Budget, s.Runs, s.MedianMs, s.MinMs, s.MaxMs, s.CgroupCPUMs, s.MemPeak, s.GOMAXPROCS)
		}
	}
	for _, arm := range []string{"default", "static"} {
		for _, b := range []string{"cores=0.5", "mem=64Mi"} {
			s, ok := got[arm+" "+b]
			if !ok {
				t.Errorf("no summary for %s under %s in the guest's results", arm, b)
				continue
			}
			if s.Runs != 3 || s.MedianMs <= 0 || s.CgroupCPUMs <= 0 || s.MemPeak <= 0 {
				t.Errorf("%s under %s: %+v; want 3 runs with a time, cgroup CPU and a memory peak (memory.peak)", arm, b, s)
			}
			// 4 vCPUs: a half-core quota lowers Go's GOMAXPROCS to 2.
			if want := map[string]int{"cores=0.5": 2, "mem=64Mi": 4}[b]; s.GOMAXPROCS != want {
				t.Errorf("%s under %s: GOMAXPROCS predicted %d, want %d on 4 vCPUs", arm, b, s.GOMAXPROCS, want)
			}
		}
	}
	// The detaching server's campaign: every start contained by its
	// cgroup on v2 (guestinit failed the step if a sleep survived).
	detached := map[string]int{}
	for _, s := range records(detachFile) {
		if s.Kind != "sample" {
			continue
		}
		if s.Error != "" || s.Containment != "cgroup-v2" {
			t.Errorf("detaching server under %s: error %q, containment %q; want none and cgroup-v2", s.Budget, s.Error, s.Containment)
		}
		detached[s.Budget]++
	}
	if detached["max"] != 6 || detached["cores=1"] != 6 {
		t.Errorf("detaching server's samples per budget: %v, want 6 (warm-up and 5 runs) under max and cores=1", detached)
	}
	// Not root, in the delegated subtree: the budget's cgroup was made
	// and read as for root, and contained each start.
	var userSummary bool
	for _, s := range records(userFile) {
		switch s.Kind {
		case "summary":
			userSummary = true
			t.Logf("guest summary as uid %d: %s %s runs %d  median %.1f ms  cgroup CPU %.1f ms  memory peak %d B",
				userUID, s.Arm, s.Budget, s.Runs, s.MedianMs, s.CgroupCPUMs, s.MemPeak)
			if s.Arm != "default" || s.Budget != "cores=0.5,mem=64Mi" || s.Runs != 3 || s.MedianMs <= 0 || s.CgroupCPUMs <= 0 || s.MemPeak <= 0 {
				t.Errorf("as uid %d: %+v; want default under cores=0.5,mem=64Mi, 3 runs with a time, cgroup CPU and a memory peak", userUID, s)
			}
		case "sample":
			if s.Error != "" || s.Containment != "cgroup-v2" {
				t.Errorf("as uid %d: sample error %q, containment %q; want none and cgroup-v2", userUID, s.Error, s.Containment)
			}
		}
	}
	if !userSummary {
		t.Errorf("as uid %d: no summary in the results:\n%s", userUID, userFile)
	}
	var interrupted int
	for _, s := range records(intFile) {
		if s.Kind == "sample" && s.Error != "" {
			interrupted++
			t.Logf("interrupted sample: %s", s.Error)
		}
	}
	if interrupted == 0 {
		t.Errorf("the interrupted campaign's results hold no interrupted sample:\n%s", intFile)
	}
}
