package explain

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/coldstart-go/coldstart/record"
)

// ErrNoBuildInfo is returned when a binary carries no Go build info: it is
// not a Go program, or its build info was stripped or packed away.
var ErrNoBuildInfo = errors.New("no Go build info")

// upxMagic marks a UPX-packed executable.
var upxMagic = []byte("UPX!")

// ReadModules reads bin's build info. A UPX-packed binary has none
// readable (the packed file hides it): its unpacked twin (`upx -d` into a
// temp file, removed afterwards) is read instead. Without build info it
// returns a record.Modules whose Note says why, and ErrNoBuildInfo.
func ReadModules(ctx context.Context, bin string) (record.Modules, error) {
	m := record.Modules{Binary: bin}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		packed, perr := isUPX(bin)
		if perr != nil {
			m.Note = fmt.Sprintf("read %s: %v", bin, perr)
			return m, fmt.Errorf("read build info of %s: %w", bin, perr)
		}
		if !packed {
			m.Note = fmt.Sprintf("%s has no Go build info (%v): not a Go binary, or its build info was removed; packages cannot be attributed to modules", bin, err)
			return m, fmt.Errorf("%w in %s: %v", ErrNoBuildInfo, bin, err)
		}
		if bi, err = unpackedBuildInfo(ctx, bin); err != nil {
			m.Note = fmt.Sprintf("%s is UPX-packed and its unpacked twin could not be read (%v); packages cannot be attributed to modules", bin, err)
			return m, fmt.Errorf("%w in %s: %v", ErrNoBuildInfo, bin, err)
		}
		m.Binary = bin + " (unpacked twin, upx -d)"
	}
	m.GoVersion = bi.GoVersion
	m.Main, m.MainVersion = bi.Main.Path, bi.Main.Version
	if bi.Path == "command-line-arguments" || m.Main == "" {
		m.Main = ""
		m.Note = fmt.Sprintf("%s was built without module information (path %q): packages outside the standard library cannot be attributed to modules", bin, bi.Path)
	}
	m.Deps = map[string]string{}
	for _, d := range bi.Deps {
		mod := d
		if d.Replace != nil {
			mod = &debug.Module{Path: d.Path, Version: d.Replace.Path + " " + d.Replace.Version}
		}
		m.Deps[mod.Path] = mod.Version
	}
	return m, nil
}

func isUPX(bin string) (bool, error) {
	f, err := os.Open(bin)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return bytes.Contains(head[:n], upxMagic), nil
}

// unpackedBuildInfo runs `upx -d` on a copy of bin and reads the result.
func unpackedBuildInfo(ctx context.Context, bin string) (*debug.BuildInfo, error) {
	upx, err := exec.LookPath("upx")
	if err != nil {
		return nil, fmt.Errorf("unpack needs upx: %w", err)
	}
	dir, err := os.MkdirTemp("", "coldstart-unpack-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "unpacked")
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, upx, "-q", "-d", "-o", out, bin)
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("upx -d %s: %v: %s", bin, err, strings.TrimSpace(stderr.String()))
	}
	return buildinfo.ReadFile(out)
}
