package builds

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A build copied out with Options.OutDir leaves its record beside it:
// <package>-<arm>.json, the Artifact with Path the copy's base name. A
// machine without Go (a test guest, a target host) then measures the arms
// built elsewhere, from that directory, with their records intact.

// recordSuffix names a copied artifact's record: <copy> + recordSuffix.
const recordSuffix = ".json"

// ErrNoPrebuilt is returned by LoadPrebuilt when the directory holds no
// record of the arm.
var ErrNoPrebuilt = errors.New("no prebuilt artifact")

// writeRecord writes a's record beside its copy a.Path.
func writeRecord(a Artifact) error {
	rec := a
	rec.Path = filepath.Base(a.Path)
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp := a.Path + recordSuffix + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write record of %s arm: %w", a.Arm, err)
	}
	if err := os.Rename(tmp, a.Path+recordSuffix); err != nil {
		return fmt.Errorf("write record of %s arm: %w", a.Arm, err)
	}
	return nil
}

// LoadPrebuilt returns the arm's artifact from dir, where an earlier build
// with Options.OutDir (coldstart build --out-dir) copied it, after checking
// the binary still has the size and SHA-256 its record names. The record
// keeps how and when it was built; Cached is set (not built now).
func LoadPrebuilt(dir, arm string) (Artifact, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Artifact{}, err
	}
	recs, err := filepath.Glob(filepath.Join(dir, "*-"+arm+recordSuffix))
	if err != nil {
		return Artifact{}, err
	}
	switch len(recs) {
	case 0:
		return Artifact{}, fmt.Errorf("%w of the %s arm in %s (want the *-%s%s record that coldstart build --out-dir %s writes)",
			ErrNoPrebuilt, arm, dir, arm, recordSuffix, dir)
	case 1:
	default:
		return Artifact{}, fmt.Errorf("%s arm: %d records in %s (%s): keep one package's builds per directory",
			arm, len(recs), dir, strings.Join(recs, ", "))
	}
	raw, err := os.ReadFile(recs[0])
	if err != nil {
		return Artifact{}, fmt.Errorf("read prebuilt %s arm: %w", arm, err)
	}
	var a Artifact
	if err := json.Unmarshal(raw, &a); err != nil {
		return Artifact{}, fmt.Errorf("read %s: %w", recs[0], err)
	}
	if a.Arm != arm || a.Path == "" || filepath.Base(a.Path) != a.Path {
		return Artifact{}, fmt.Errorf("read %s: a record of arm %q at %q, want arm %q beside it", recs[0], a.Arm, a.Path, arm)
	}
	a.Path = filepath.Join(dir, a.Path)
	sum, n, err := sumFile(a.Path)
	if err != nil {
		return Artifact{}, fmt.Errorf("prebuilt %s arm: %w", arm, err)
	}
	if sum != a.SHA256 || n != a.SizeBytes {
		return Artifact{}, fmt.Errorf("prebuilt %s arm %s: %d bytes, sha256 %s; its record %s says %d bytes, sha256 %s: changed since it was built",
			arm, a.Path, n, sum, recs[0], a.SizeBytes, a.SHA256)
	}
	a.Cached = true
	return a, nil
}
