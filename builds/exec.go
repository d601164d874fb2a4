package builds

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// step is one command run by a builder.
type step struct {
	dir  string
	env  []string // added to this process's environment
	name string
	args []string
}

// String is the step as a shell command line, replayable by hand.
func (s step) String() string {
	var b strings.Builder
	if s.dir != "" {
		b.WriteString("cd " + shellQuote(s.dir) + " && ")
	}
	for _, e := range s.env {
		b.WriteString(shellQuote(e) + " ")
	}
	b.WriteString(shellQuote(s.name))
	for _, a := range s.args {
		b.WriteString(" " + shellQuote(a))
	}
	return b.String()
}

// run runs s, logging its command line to log (nil = not), and returns its
// stdout. A failure carries the tail of its stderr.
func (s step) run(ctx context.Context, log io.Writer) ([]byte, error) {
	if log != nil {
		fmt.Fprintf(log, "+ %s\n", s)
	}
	cmd := exec.CommandContext(ctx, s.name, s.args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = s.dir
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &stepError{cmd: s.String(), err: err, tail: tail(stderr.String(), 30, 4000)}
	}
	return stdout.Bytes(), nil
}

// stepError is a failed command: its error and the tail of its stderr.
type stepError struct {
	cmd  string
	err  error
	tail string
}

func (e *stepError) Error() string {
	if e.tail == "" {
		return e.err.Error()
	}
	return e.err.Error() + "; output:\n" + e.tail
}

func (e *stepError) Unwrap() error { return e.err }

// tail keeps the last n lines of s, at most max bytes.
func tail(s string, n, max int) string {
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	s = strings.Join(lines, "\n")
	if len(s) > max {
		s = "..." + s[len(s)-max:]
	}
	return s
}

func shellQuote(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]{}~#") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
