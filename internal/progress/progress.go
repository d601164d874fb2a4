// Package progress reports how far a measuring campaign has got: one line
// per step for logs, pipes and -q-less scripts (Lines), or, on a terminal,
// one live bar per campaign with done/total, elapsed time, an ETA and the
// last step's line (Terminal).
package progress

import (
	"fmt"
	"io"
)

// Reporter is what a campaign tells about its progress. A campaign calls
// Start once with the number of steps it will take, Step after each, and
// Done when it ends, finished or not. Its methods are safe for concurrent
// use.
type Reporter interface {
	// Start begins a campaign of total steps (0 = unknown), named what
	// ("cold starts").
	Start(total int, what string)
	// Step says one step is done; line describes it (arm, budget, round,
	// result), as one line without its newline.
	Step(line string)
	// Skip says n steps of the total will not be taken (an arm left out
	// of the later rounds after it failed), so the total shrinks.
	Skip(n int)
	// Done ends the campaign's progress: after it, Step and Skip do
	// nothing until the next Start. Done may be called more than once.
	Done()
}

// For is the Reporter for a campaign's progress writer w: nil is quiet,
// a writer that is a Reporter itself (a Terminal) reports as one, and any
// other writer gets Lines.
func For(w io.Writer) Reporter {
	switch w := w.(type) {
	case nil:
		return quiet{}
	case Reporter:
		return w
	default:
		return Lines(w)
	}
}

// Lines is the Reporter that writes each step's line to w, with nothing
// for Start, Skip and Done: what a log or a pipe wants.
func Lines(w io.Writer) Reporter { return lines{w} }

type lines struct{ w io.Writer }

func (l lines) Start(int, string) {}
func (l lines) Step(line string)  { fmt.Fprintln(l.w, line) }
func (l lines) Skip(int)          {}
func (l lines) Done()             {}

type quiet struct{}

func (quiet) Start(int, string) {}
func (quiet) Step(string)       {}
func (quiet) Skip(int)          {}
func (quiet) Done()             {}

var (
	_ Reporter = lines{}
	_ Reporter = quiet{}
	_ Reporter = (*Terminal)(nil)
)
