package cliopts

import (
	"fmt"
	"io"
	"os"

	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/internal/render"
	"github.com/coldstart-go/coldstart/internal/resultfile"
)

// Results is a measuring command's results file, provenance first: the
// one path coldstart and steady write results by.
type Results struct {
	*resultfile.File
	tool string
	errw io.Writer // the command's error writer, for notes
}

// CreateResults starts <--results-dir>/<YYYYMMDD-HHMMSS>_<label>.jsonl with
// this process's provenance and notes (nil = none), such as a cluster's
// versions, and a note per variant ("variant NAME": its arm and settings).
func (c *Common) CreateResults(label string, notes map[string]string) (*Results, error) {
	if vn := variantNotes(c.variants); vn != nil {
		all := map[string]string{}
		for k, v := range notes {
			all[k] = v
		}
		for k, v := range vn {
			all[k] = v
		}
		notes = all
	}
	return CreateResults(c.tool, c.Errw(), c.ResultsDir, label, notes)
}

// CreateResults is Common.CreateResults for a command without the shared
// flags (coldstart pull): tool names the provenance and notes, which go
// to errw.
func CreateResults(tool string, errw io.Writer, dir, label string, notes map[string]string) (*Results, error) {
	prov := provenance.Collect(tool, os.Args)
	prov.Notes = notes
	f, err := resultfile.Create(dir, label, prov)
	if err != nil {
		return nil, err
	}
	return &Results{File: f, tool: tool, errw: errw}, nil
}

// Notef writes one note ("coldstart: results in ...") to the error
// writer, whatever -q says: notes are about the results, not progress.
func (r *Results) Notef(format string, args ...any) {
	fmt.Fprintf(r.errw, r.tool+": "+format+"\n", args...)
}

// AddBuilt records each artifact ("artifact") and each arm that could not
// be made ("build_error"), and names the latter as not measured.
func (r *Results) AddBuilt(arts []builds.Artifact, failed []error) error {
	if err := AddAll(r, "artifact", arts); err != nil {
		return err
	}
	for _, f := range failed {
		r.Notef("not measured: %v", f)
		if err := r.Add("build_error", struct {
			Error string `json:"error"`
		}{f.Error()}); err != nil {
			return err
		}
	}
	return nil
}

// AddAll records each of rows as kind.
func AddAll[T any](r *Results, kind string, rows []T) error {
	for _, row := range rows {
		if err := r.Add(kind, row); err != nil {
			return err
		}
	}
	return nil
}

// End ends a campaign the one way every measuring command does: it says
// where the results file is, prints what was measured with print (also
// when the campaign failed or was interrupted: what it finished is shown),
// and returns the campaign's error, else one naming the arms that were not
// measured (built's failures), after the rest were printed.
func (r *Results) End(w io.Writer, print func(io.Writer) error, err error, built campaign.Built) error {
	r.Notef("results in %s", r.Path())
	if perr := print(w); perr != nil && err == nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if ferr := built.Err(); ferr != nil {
		return fmt.Errorf("measured %s only: %w", campaign.ArmNames(built.Arms), ferr)
	}
	return nil
}

// Rows is a print function for End: rows in the -o format, nothing when
// there are none.
func Rows[T any](f render.Format, rows []T) func(io.Writer) error {
	return func(w io.Writer) error {
		if len(rows) == 0 {
			return nil
		}
		return render.Write(w, f, rows)
	}
}
