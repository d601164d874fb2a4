// Command criukdat measures what CRIU's kernel-feature cache is worth to the
// snapshot arm: how much sooner `criu restore` returns when criu can keep
// its kerndat cache (/run/criu.kdat, which it keeps only on a tmpfs) than
// when it must probe the kernel's features on every run, as on hosts whose
// /run is not a tmpfs (this one: ext4).
//
// It checkpoints the sample server once (as the snapshot arm does), then
// restores it -n times per mode, alternating, each restore in a private
// mount namespace whose /run is bind-mounted from either a tmpfs directory
// (mode "tmpfs": the first criu writes the cache, later ones load it; one
// uncounted `criu check` fills it first) or a directory on the root
// filesystem (mode "none": criu warns it cannot keep the cache and probes
// every time). Both modes run the same wrapper (unshare, sh, mount --bind),
// so the difference of the medians is the cache. Each restore's time is
// from starting the wrapper to criu's exit; the restored server is then
// stopped.
//
//	go run ./bench/criukdat -n 20                    # the default build of examples/echo
//	go run ./bench/criukdat -n 20 -bin ./myserver -- --listen={addr}
//
// Needs root, criu (scripts/test-setup.sh), unshare and mount (util-linux).
// Writes results/<YYYYMMDD-HHMMSS>_criu-kdat.jsonl: provenance, one
// "kdat_restore" row per restore, one "kdat_summary" per mode.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/resultfile"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// Row is one restore; Summary is one mode's medians.
type (
	Row     = record.KdatRestore
	Summary = record.KdatSummary
)

func main() {
	n := flag.Int("n", 20, "restores per mode")
	bin := flag.String("bin", "", "server binary (\"\" = go build ./examples/echo)")
	results := flag.String("results-dir", "results", "where to write the results file")
	flag.Parse()
	if err := run(context.Background(), *n, *bin, *results, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "criukdat:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, n int, bin, results string, args []string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("needs root (criu, mount namespaces)")
	}
	work, err := os.MkdirTemp("", "criukdat-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if bin == "" {
		bin = filepath.Join(work, "echo")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/echo")
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("build examples/echo: %w", err)
		}
		if len(args) == 0 {
			args = []string{"--addr", "{addr}"}
		}
	}
	tg, err := prober.FreeTCP()
	if err != nil {
		return err
	}
	tmpl, err := prober.ParseTemplate(args)
	if err != nil {
		return err
	}
	sargs, err := tmpl.Expand(prober.VarsFor(tg))
	if err != nil {
		return err
	}
	sn := &launch.Snapshot{WorkDir: work}
	if err := sn.Check(ctx); err != nil {
		return err
	}
	ck, err := sn.Checkpoint(ctx, launch.Spec{Arm: "snapshot", Path: bin, Args: sargs, Target: tg})
	if err != nil {
		return err
	}
	defer ck.Close()
	criu, err := exec.LookPath("criu")
	if err != nil {
		return err
	}
	// /run stand-ins: a tmpfs, and a directory on the root filesystem.
	tmpfsRun, diskRun := filepath.Join(work, "run-tmpfs"), filepath.Join(work, "run-disk")
	for _, d := range []string{tmpfsRun, diskRun} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	if err := unix.Mount("tmpfs", tmpfsRun, "tmpfs", 0, "size=16m"); err != nil {
		return fmt.Errorf("mount tmpfs: %w", err)
	}
	defer unix.Unmount(tmpfsRun, unix.MNT_DETACH)
	// Fill the cache once (uncounted).
	if out, err := wrapped(ctx, tmpfsRun, criu, "check").CombinedOutput(); err != nil {
		return fmt.Errorf("criu check: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(tmpfsRun, "criu.kdat")); err != nil {
		return fmt.Errorf("criu did not write its cache to the tmpfs: %w", err)
	}
	rf, err := resultfile.Create(results, "criu-kdat", provenance.Collect("criukdat", os.Args))
	if err != nil {
		return err
	}
	rows := map[string][]Row{}
	for i := 1; i <= n; i++ {
		for _, mode := range []string{"none", "tmpfs"} {
			dir := diskRun
			if mode == "tmpfs" {
				dir = tmpfsRun
			}
			r, err := restoreOnce(ctx, ck, criu, dir, tg)
			if err != nil {
				return fmt.Errorf("%s run %d: %w", mode, i, err)
			}
			r.Mode, r.Run = mode, i
			if err := rf.Add("kdat_restore", r); err != nil {
				return err
			}
			rows[mode] = append(rows[mode], r)
			fmt.Fprintf(os.Stderr, "run %d/%d  %-5s %7.2f ms (criu restore time %.2f ms, cache loaded %v)\n", i, n, mode, r.RestoreMs, r.CRIURestoreMs, r.CacheLoaded)
		}
	}
	var sums []Summary
	for _, mode := range []string{"none", "tmpfs"} {
		var xs, cs []float64
		s := Summary{Mode: mode, Runs: len(rows[mode])}
		for _, r := range rows[mode] {
			xs, cs = append(xs, r.RestoreMs), append(cs, r.CRIURestoreMs)
			if r.CacheLoaded {
				s.CacheLoadedRuns++
			}
		}
		q := record.Quantiles(xs, 0.5, 0, 1)
		s.MedianMs, s.MinMs, s.MaxMs = q[0], q[1], q[2]
		s.MedianCRIUMs = record.Quantiles(cs, 0.5)[0]
		sums = append(sums, s)
	}
	sums[1].SavedVsNoneMs = sums[0].MedianMs - sums[1].MedianMs
	tw := tabwriter.NewWriter(os.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "kdat_cache\truns\tmedian_restore_ms\tmin_ms\tmax_ms\tcriu_restore_time_ms\tcache_loaded_runs\tsaved_ms")
	for _, s := range sums {
		if err := rf.Add("kdat_summary", s); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.1f\n", s.Mode, s.Runs, s.MedianMs, s.MinMs, s.MaxMs, s.MedianCRIUMs, s.CacheLoadedRuns, s.SavedVsNoneMs)
	}
	fmt.Fprintf(os.Stderr, "criukdat: results in %s\n", rf.Path())
	return tw.Flush()
}

// wrapped runs criu with args in a private mount namespace whose /run is
// runDir.
func wrapped(ctx context.Context, runDir, criu string, args ...string) *exec.Cmd {
	script := `mount --bind "$1" /run && shift && exec "$@"`
	return exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", script, "sh", runDir, criu}, args...)...)
}

// restoreOnce restores ck through the wrapper, times it, checks the server
// answers, and stops it.
func restoreOnce(ctx context.Context, ck *launch.Checkpoint, criu, runDir string, tg prober.Target) (Row, error) {
	work, err := os.MkdirTemp(ck.Dir, "kdat-")
	if err != nil {
		return Row{}, err
	}
	defer os.RemoveAll(work)
	// stderr of the restored server goes nowhere: /dev/null for every
	// external pipe criu asks for.
	args := []string{"restore", "-D", filepath.Join(ck.Dir, "images"), "-W", work, "-o", "restore.log", "-v4",
		"--restore-detached", "--pidfile", "pid", "--tcp-close", "--manage-cgroups=ignore", "--display-stats"}
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return Row{}, err
	}
	defer devnull.Close()
	inherit := ck.InheritArgs(3)
	cmd := wrapped(ctx, runDir, criu, append(args, inherit...)...)
	for i := 0; i < len(inherit)/2; i++ {
		cmd.ExtraFiles = append(cmd.ExtraFiles, devnull)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err = cmd.Run()
	r := Row{RestoreMs: float64(time.Since(start)) / float64(time.Millisecond)}
	if err != nil {
		return r, fmt.Errorf("criu restore: %v: %s", err, out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Restore time: "); ok {
			us, _ := strconv.ParseFloat(strings.TrimSuffix(v, " us"), 64)
			r.CRIURestoreMs = us / 1000
		}
	}
	if log, err := os.ReadFile(filepath.Join(work, "restore.log")); err == nil {
		r.CacheLoaded = bytes.Contains(log, []byte("Loaded kdat cache"))
	}
	b, err := os.ReadFile(filepath.Join(work, "pid"))
	if err != nil {
		return r, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return r, err
	}
	defer stop(pid)
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if a, err := (prober.Health{}).Check(actx, tg); err != nil || !a.Ready {
		return r, fmt.Errorf("restored server does not answer: %v %s", err, a.Detail)
	}
	return r, nil
}

// stop kills the restored server (not our child) and waits until it is gone.
func stop(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	_ = unix.PidfdSendSignal(fd, syscall.SIGKILL, nil, 0)
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 5000)
}
