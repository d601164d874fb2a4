package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/gate"
	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/stats"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// runGateBase is gate --base REV: PKG built at REV (in a temporary git
// worktree) and in the working tree, with the same build flags, measured
// in one campaign as arms base.ARM and new.ARM, interleaved (in turn
// first), then gated paired by round from the results file the campaign
// wrote.
func runGateBase(ctx context.Context, o *gateOptions) (*gate.Result, error) {
	src := builds.Source{Pkg: o.Pkg, Dir: o.ModuleDir}
	if o.Sample() {
		s, err := builds.SampleSource()
		if err != nil {
			return nil, err
		}
		src = s
	}
	if src.Dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		src.Dir = wd
	}
	tree, err := checkoutBase(ctx, src, o.Base, o.Errw())
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := tree.remove(); err != nil {
			o.Notef("%v", err)
		}
	}()
	bo := builds.Options{UPXLevel: o.UPXLevel, PGOProfile: o.PGOProfile, Instrument: o.Instrument, Progress: o.Progress(), Verbose: o.Verbose}
	var bins []campaign.Binary
	built := map[string][]builds.Artifact{}
	for _, side := range []struct {
		name string
		src  builds.Source
		what string
	}{{gate.Base, tree.src, fmt.Sprintf("%s (%s)", o.Base, short(tree.commit))}, {gate.New, src, "the working tree" + tree.dirty}} {
		o.Notef("building %s at %s", strings.Join(o.Arms.Names, ", "), side.what)
		arts, errs := builds.BuildAll(ctx, side.src, o.Arms.Names, bo)
		for i, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%s: %w", side.name, err)
			}
			built[o.Arms.Names[i]] = append(built[o.Arms.Names[i]], arts[i])
		}
	}
	for _, arm := range o.Arms.Names {
		for i, side := range []string{gate.Base, gate.New} {
			bins = append(bins, campaign.Binary{Name: side + "." + arm, Path: built[arm][i].Path})
		}
	}
	// The binaries are measured as they are, each as its arm, from one
	// server template: the sample's own when it is the sample.
	sample := o.Sample()
	o.Pkg, o.Arms.Names, o.Bin.Named = "", nil, bins
	if sample && len(o.ServerArgs) == 0 {
		o.ServerArgs = []string{"--addr", "{addr}"}
		if o.Transport == "unix" {
			o.ServerArgs = []string{"--unix", "{socket}"}
		}
	}
	o.notes = map[string]string{
		"gate base": fmt.Sprintf("%s = %s", o.Base, tree.commit),
		"gate new":  "working tree at " + tree.head + tree.dirty,
	}
	path, err := o.measure(ctx)
	if err != nil {
		return nil, err
	}
	in, err := o.load(path)
	if err != nil {
		return nil, err
	}
	return gate.ComparePaired(in, o.gateOptions())
}

// measure runs the campaign of the base and new binaries, interleaved, as
// coldstart run does, and returns the results file's path.
func (o *gateOptions) measure(ctx context.Context) (string, error) {
	checker, rf, built, err := o.begin(ctx, "gate", o.Transport)
	defer built.Close()
	if err != nil {
		return "", err
	}
	addr, _ := o.fixedAddr()
	c := campaign.ColdStart{
		Arms: built.Arms, Addr: addr, Budgets: o.Budgets.Budgets, Runs: o.Runs, Transport: campaign.Transport(o.Transport),
		Checker: checker, Wait: prober.WaitOptions{Timeout: o.Timeout},
		Progress: o.Progress(), Log: o.Log(), Confidence: o.Confidence,
		Noise: func(n campaign.Noise) error { return rf.Add("noise", n) },
		// Base and new take turns going first (campaign's default): what
		// a start inherits from the one before cancels in the pairs.
	}
	if o.AutoRuns {
		// Both sides stop together, on the medians' precision, never
		// on the comparison: the gate's test is not peeked at; and not
		// before the gate's tests can find anything.
		c.Runs, c.Precision, c.MaxRuns, c.MinRuns = 0, o.Precision, o.MaxRuns, gate.MinAutoRounds(o.Confidence)
		c.Stopped = func(s campaign.Stop) error {
			rf.Notef("%s", s)
			return rf.Add("stop", s)
		}
	}
	var samples []prober.Sample
	sums, err := c.Run(ctx, func(s prober.Sample) error {
		samples = append(samples, s)
		return rf.Add("sample", s)
	})
	if len(built.Arms) > 0 {
		record.CompareToBaseline(sums, samples, built.Arms[0].Name, o.Confidence, stats.DefaultMinEffect)
	}
	if rerr := cliopts.AddAll(rf, "summary", sums); rerr != nil && err == nil {
		err = rerr
	}
	// stdout is the gate's: the campaign's table is not printed.
	if err := rf.End(io.Discard, func(io.Writer) error { return nil }, err, built); err != nil {
		return "", err
	}
	return rf.Path(), nil
}

// baseTree is the base revision checked out in a temporary worktree.
type baseTree struct {
	top    string // the repository's top level
	dir    string // the worktree
	parent string // the temporary directory holding it
	forget func()
	// src is the package to build, in the worktree.
	src builds.Source
	// commit is REV resolved; head the working tree's commit, dirty
	// " with uncommitted changes" when it has them ("" when not).
	commit, head, dirty string
}

// checkoutBase resolves rev in the git repository holding src.Dir and
// checks it out, detached, in a new worktree under a temporary directory
// (recorded in the run's state file, so the next run or coldstart clean
// removes it after a SIGKILL; git then lists the worktree as prunable).
// src maps into it: the same directory and package relative to the
// repository's top level. remove takes it away again.
func checkoutBase(ctx context.Context, src builds.Source, rev string, log io.Writer) (*baseTree, error) {
	dir, err := filepath.EvalSymlinks(src.Dir)
	if err != nil {
		return nil, fmt.Errorf("--base: %w", err)
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("--base %s: %s is not in a git repository: %w", rev, dir, err)
	}
	rel, err := filepath.Rel(top, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("--base: %s is not inside the repository %s", dir, top)
	}
	commit, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		return nil, fmt.Errorf("--base %s: not a commit in %s", rev, top)
	}
	t := &baseTree{top: top, commit: commit}
	t.head, _ = git(ctx, top, "rev-parse", "--short", "HEAD")
	if st, err := git(ctx, top, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		t.dirty = " with uncommitted changes"
	}
	t.parent, t.forget, err = leftovers.MkdirTemp("", "coldstart-gate-")
	if err != nil {
		return nil, fmt.Errorf("--base: %w", err)
	}
	// Named as the repository's own directory, so that a package at its
	// top level builds to a binary of the same name.
	t.dir = filepath.Join(t.parent, filepath.Base(top))
	if _, err := git(ctx, top, "worktree", "add", "--detach", "--quiet", t.dir, commit); err != nil {
		_ = os.RemoveAll(t.parent)
		t.forget()
		return nil, fmt.Errorf("--base %s: %w", rev, err)
	}
	fmt.Fprintf(log, "coldstart: %s (%s) checked out in %s\n", rev, short(commit), t.dir)
	t.src = builds.Source{Pkg: src.Pkg, Dir: filepath.Join(t.dir, rel)}
	if filepath.IsAbs(src.Pkg) {
		p, err := filepath.EvalSymlinks(src.Pkg)
		if err != nil {
			return nil, t.fail(fmt.Errorf("PKG %s: %w", src.Pkg, err))
		}
		r, err := filepath.Rel(top, p)
		if err != nil || strings.HasPrefix(r, "..") {
			return nil, t.fail(fmt.Errorf("PKG %s: not inside the repository %s, so not at %s", src.Pkg, top, rev))
		}
		t.src.Pkg = filepath.Join(t.dir, r)
	}
	return t, nil
}

// fail removes the worktree and returns err (with the removal's error).
func (t *baseTree) fail(err error) error {
	if rerr := t.remove(); rerr != nil {
		return fmt.Errorf("%w (and %v)", err, rerr)
	}
	return err
}

// remove takes the worktree away, also when the campaign was interrupted:
// git forgets it and the temporary directory is removed.
func (t *baseTree) remove() error {
	// Not under ctx: on Ctrl-C the removal is what must still happen.
	// Should git refuse, removing the directory and pruning has git
	// forget the worktree all the same.
	_, _ = git(context.Background(), t.top, "worktree", "remove", "--force", t.dir)
	err := os.RemoveAll(t.parent)
	_, _ = git(context.Background(), t.top, "worktree", "prune")
	if err != nil {
		return fmt.Errorf("remove the base worktree %s: %w", t.dir, err)
	}
	t.forget()
	return nil
}

// git runs git in dir and returns its output, trimmed; the error carries
// its stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
