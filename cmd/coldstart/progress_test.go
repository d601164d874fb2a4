package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coldstart-go/coldstart/internal/require"
)

// TestProgressOnTerminal runs coldstart run on the bundled sample server
// inside a real terminal, a tmux pane 100 columns wide, as a person
// would: the progress is one live bar that ends at 8/8 (warm-up + 3 runs
// × 2 arms) with its elapsed time and ETA, not a line per probe, and the
// results come out below it. With -q there is no bar at all.
func TestProgressOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the sample server in a terminal; skipped in -short mode")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		require.Skipf(t, require.Tmux, "tmux not installed (scripts/test-setup.sh installs it): no terminal to run in")
	}
	bin, err := exec.LookPath("coldstart") // this test binary, as TestMain put it on $PATH
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bar := regexp.MustCompile(`cold starts (\d+)/8 \[[=>-]+\] elapsed \d+s, ETA (\d+s|\?)  run \d/3 `)
	perProbe := regexp.MustCompile(`(?m)^run \d/3  `)

	t.Run("live bar", func(t *testing.T) {
		screen := inTmux(t, tmux, root, bin+" run -n 3 --arms default,static --results-dir "+t.TempDir())
		if !strings.Contains(screen, "EXIT=0") {
			t.Fatalf("coldstart run failed:\n%s", screen)
		}
		bars := bar.FindAllStringSubmatch(screen, -1)
		if len(bars) != 1 || bars[0][1] != "8" {
			t.Errorf("want one progress line, at 8/8, fitting the 100 columns; screen:\n%s", screen)
		}
		if perProbe.MatchString(screen) {
			t.Errorf("a line per probe on a terminal; screen:\n%s", screen)
		}
		for _, want := range []string{"results in ", "arm ", "default ", "static "} {
			if !strings.Contains(screen, want) {
				t.Errorf("screen lacks %q:\n%s", want, screen)
			}
		}
		if i, j := strings.Index(screen, "cold starts 8/8"), strings.Index(screen, "results in "); i > j {
			t.Errorf("the results note is above the bar, want it below; screen:\n%s", screen)
		}
	})
	// Interrupted with ^C, which the terminal echoes below the bar: the
	// bar is redrawn from the first column, stays one line, and the error
	// comes out below it.
	t.Run("interrupted", func(t *testing.T) {
		screen := inTmux(t, tmux, root, bin+" run -n 5000 --arms default,static --results-dir "+t.TempDir(), func(tm tmuxFunc) {
			waitScreen(t, tm, regexp.MustCompile(`cold starts [1-9]\d*/10002 `))
			if out, err := tm("send-keys", "C-c"); err != nil {
				t.Fatalf("tmux send-keys: %v: %s", err, out)
			}
		})
		if !strings.Contains(screen, "EXIT=1") || !strings.Contains(screen, "coldstart: context canceled") {
			t.Fatalf("want exit 1 and the interruption's error; screen:\n%s", screen)
		}
		lines := regexp.MustCompile(`(?m)^.*cold starts.*$`).FindAllString(screen, -1)
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "cold starts ") || utf8.RuneCountInString(lines[0]) > 100 {
			t.Errorf("want one bar line from the first column, within 100 columns, got %q; screen:\n%s", lines, screen)
		}
		if i, j := strings.Index(screen, "cold starts"), strings.Index(screen, "context canceled"); i > j {
			t.Errorf("the error is above the bar; screen:\n%s", screen)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		screen := inTmux(t, tmux, root, bin+" run -q -n 1 --arms static --results-dir "+t.TempDir())
		if !strings.Contains(screen, "EXIT=0") {
			t.Fatalf("coldstart run -q failed:\n%s", screen)
		}
		if strings.Contains(screen, "cold starts") || perProbe.MatchString(screen) {
			t.Errorf("progress under -q; screen:\n%s", screen)
		}
		if !strings.Contains(screen, "results in ") {
			t.Errorf("the results note is missing under -q; screen:\n%s", screen)
		}
	})
}

// tmuxFunc runs tmux with args on a test's own server.
type tmuxFunc func(args ...string) (string, error)

// inTmux runs command in dir in a detached tmux pane of 100×50 on a
// server of its own, does what while it runs, waits until it has exited,
// and returns the pane's text, scrollback included.
func inTmux(t *testing.T, tmux, dir, command string, while ...func(tmuxFunc)) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) (string, error) {
		cmd := exec.Command(tmux, append([]string{"-S", sock}, args...)...)
		cmd.Env = append(os.Environ(), "TERM=xterm-256color")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// The pane stays open after the command so its screen can be read,
	// and a ^C for the command does not end the shell.
	script := "trap : INT; cd " + dir + " && " + command + "; echo EXIT=$?; sleep 300"
	if out, err := tm("new-session", "-d", "-x", "100", "-y", "50", "sh", "-c", script); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { tm("kill-server") })
	for _, w := range while {
		w(tm)
	}
	return waitScreen(t, tm, regexp.MustCompile(`EXIT=\d+`))
}

// waitScreen returns the pane's text once it matches re, failing the test
// after 3 minutes.
func waitScreen(t *testing.T, tm tmuxFunc, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		screen, err := tm("capture-pane", "-p", "-S", "-")
		if err != nil {
			t.Fatalf("tmux capture-pane: %v: %s", err, screen)
		}
		if re.MatchString(screen) {
			return screen
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen does not match %s after 3 minutes:\n%s", re, screen)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
