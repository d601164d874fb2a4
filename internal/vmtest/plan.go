package vmtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// PlanPath is where the guest's /init reads its Plan.
const PlanPath = "/vmtest/plan.json"

// Plan is what the guest runs: its steps in order, then the files it
// copies out over the console.
type Plan struct {
	Steps []Step `json:"steps"`
	// Export lists guest file globs (filepath.Match syntax) copied out after
	// the steps, base64 over the console; Outcome.Files holds them.
	Export []string `json:"export,omitempty"`
}

// Step is one command the guest runs, as root, in its own process group,
// with stdout and stderr on the console.
type Step struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	// Env is added to PATH=/bin, HOME=/root, TMPDIR=/tmp.
	Env []string `json:"env,omitempty"`
	// Dir is the working directory ("" = /).
	Dir string `json:"dir,omitempty"`
	// Timeout kills the step's process group (0 = 2 minutes).
	Timeout time.Duration `json:"timeout_ns,omitempty"`
	// InterruptWhenPopulated is a cgroup directory: once a process is in it
	// or below (its cgroup.events says "populated 1": a server started in
	// its budget's cgroup under /sys/fs/cgroup/coldstart, say), the step
	// gets SIGINT, as from Ctrl-C. "" = never.
	InterruptWhenPopulated string `json:"interrupt_when_populated,omitempty"`
	// AnyExit passes the step whatever its exit status (an interrupted
	// command); it must still end before its timeout.
	AnyExit bool `json:"any_exit,omitempty"`
	// User, when not 0, runs the step as that uid (and gid) rather than
	// root, in a cgroup subtree delegated to it as systemd delegates
	// user@UID.service: DelegatedCgroup(User), with it and its
	// cgroup.procs, cgroup.subtree_control and cgroup.threads chowned to
	// the user, and the step's process in a leaf "init" inside. The
	// guest removes both after the step; anything else left in them is
	// a cgroup left behind.
	User int `json:"user,omitempty"`
}

// DelegatedCgroup is the cgroup a step with User uid runs under, from
// the hierarchy's root.
func DelegatedCgroup(uid int) string { return "/vmtest-user-" + strconv.Itoa(uid) }

// The guest's console protocol: lines starting with Marker, anywhere in a
// console line (a step's last line may lack its newline):
//
//	@@vmtest info KEY=VALUE ...
//	@@vmtest step NAME start
//	@@vmtest step NAME exit CODE SECONDS    (CODE -1: killed at its timeout)
//	@@vmtest step NAME fail REASON          (the step failed for another reason)
//	@@vmtest file NAME SIZE SHA256, base64 lines, @@vmtest file-end NAME
//	@@vmtest end STATUS                     (0: every step passed)
const Marker = "@@vmtest "

// StepResult is what the guest reported about one step.
type StepResult struct {
	Name     string  `json:"name"`
	Exit     int     `json:"exit"` // -1: killed at its timeout
	Seconds  float64 `json:"seconds"`
	Failures []string
}

// Outcome is what a guest run reported on its console.
type Outcome struct {
	// Info holds the guest's @@vmtest info pairs (kernel, cgroup mode,
	// controllers, CPUs, memory).
	Info  map[string]string
	Steps []StepResult
	// Files are the exported files by guest path.
	Files map[string][]byte
	// Status is the guest's end status; Ended is false when the console
	// never said "end" (the guest crashed, hung or was killed).
	Status int
	Ended  bool
	// KernelPanic is the guest kernel's "Kernel panic - not syncing" line
	// when it printed one ("" otherwise): the guest died under the code it
	// ran, not by that code's own failure.
	KernelPanic string
	// Console is everything the guest printed, carriage returns removed.
	Console []byte
}

// Failed lists what failed, one line each: steps with a non-zero exit or a
// failure reason, a missing end marker, a non-zero end status.
func (o *Outcome) Failed() []string {
	var out []string
	for _, s := range o.Steps {
		for _, f := range s.Failures {
			out = append(out, fmt.Sprintf("step %s: %s", s.Name, f))
		}
	}
	switch {
	case !o.Ended:
		out = append(out, "the guest never printed its end marker")
	case o.Status != 0 && len(out) == 0:
		out = append(out, fmt.Sprintf("the guest ended with status %d", o.Status))
	}
	return out
}

// Tail returns the last n lines of the console.
func (o *Outcome) Tail(n int) string {
	lines := strings.Split(strings.TrimRight(string(o.Console), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kernelPanic starts the line a Linux kernel prints as it gives up
// (kernel/panic.c).
const kernelPanic = "Kernel panic - not syncing"

// parser reads console lines as they arrive into an Outcome.
type parser struct {
	o    Outcome
	file *fileBlock
}

type fileBlock struct {
	name string
	size int
	sum  string
	b64  strings.Builder
}

func newParser() *parser {
	return &parser{o: Outcome{Info: map[string]string{}, Files: map[string][]byte{}}}
}

func (p *parser) step(name string) *StepResult {
	for i := range p.o.Steps {
		if p.o.Steps[i].Name == name {
			return &p.o.Steps[i]
		}
	}
	p.o.Steps = append(p.o.Steps, StepResult{Name: name})
	return &p.o.Steps[len(p.o.Steps)-1]
}

// line takes one console line without its line ending.
func (p *parser) line(l string) {
	l = strings.TrimRight(l, "\r")
	p.o.Console = append(append(p.o.Console, l...), '\n')
	if j := strings.Index(l, kernelPanic); j >= 0 && p.o.KernelPanic == "" {
		p.o.KernelPanic = strings.TrimSpace(l[j:])
	}
	i := strings.Index(l, Marker)
	if i < 0 {
		if p.file != nil {
			p.file.b64.WriteString(strings.TrimSpace(l))
		}
		return
	}
	f := strings.Fields(l[i+len(Marker):])
	if len(f) == 0 {
		return
	}
	switch {
	case f[0] == "info":
		for _, kv := range f[1:] {
			if k, v, ok := strings.Cut(kv, "="); ok {
				p.o.Info[k] = v
			}
		}
	case f[0] == "step" && len(f) >= 3:
		s := p.step(f[1])
		switch f[2] {
		case "exit":
			if len(f) >= 5 {
				s.Exit, _ = strconv.Atoi(f[3])
				s.Seconds, _ = strconv.ParseFloat(f[4], 64)
			}
		case "fail":
			s.Failures = append(s.Failures, strings.Join(f[3:], " "))
		}
	case f[0] == "file" && len(f) == 4:
		size, _ := strconv.Atoi(f[2])
		p.file = &fileBlock{name: f[1], size: size, sum: f[3]}
	case f[0] == "file-end" && p.file != nil:
		fb := p.file
		p.file = nil
		data, err := base64.StdEncoding.DecodeString(fb.b64.String())
		sum := sha256.Sum256(data)
		if err != nil || len(data) != fb.size || hex.EncodeToString(sum[:]) != fb.sum {
			s := p.step("export")
			s.Failures = append(s.Failures, fmt.Sprintf("%s arrived damaged over the console (%d of %d bytes, decode error %v)", fb.name, len(data), fb.size, err))
			return
		}
		p.o.Files[fb.name] = data
	case f[0] == "end" && len(f) >= 2:
		p.o.Ended = true
		p.o.Status, _ = strconv.Atoi(f[1])
	}
}

// ParseConsole reads a whole console log (tests, or a saved log).
func ParseConsole(r io.Reader) (*Outcome, error) {
	p := newParser()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		p.line(sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read console: %w", err)
	}
	return &p.o, nil
}

// WriteFileBlock writes data as the console protocol's file block.
func WriteFileBlock(w io.Writer, name string, data []byte) error {
	sum := sha256.Sum256(data)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%sfile %s %d %s\n", Marker, name, len(data), hex.EncodeToString(sum[:]))
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 0 {
		n := min(len(enc), 76)
		b.WriteString(enc[:n])
		b.WriteByte('\n')
		enc = enc[n:]
	}
	fmt.Fprintf(&b, "%sfile-end %s\n", Marker, name)
	_, err := w.Write(b.Bytes())
	return err
}
