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
)

// Std is the module name given to the standard library's packages.
const Std = "std"

// Modules maps a binary's packages to the modules that provide them, from
// the build info the Go linker embeds (what `go version -m` prints).
type Modules struct {
	// Binary is the file the build info was read from (for a UPX-packed
	// binary: the unpacked twin).
	Binary string `json:"binary"`
	// Main is the main module's path ("" without module info), and its
	// version ("(devel)" for a build in its own checkout).
	Main        string `json:"main"`
	MainVersion string `json:"main_version,omitempty"`
	// GoVersion is the toolchain that built it.
	GoVersion string `json:"go_version"`
	// Deps are the dependency modules, path → version.
	Deps map[string]string `json:"deps,omitempty"`
	// Note says what could not be read, and so what cannot be attributed
	// ("" when the build info was read).
	Note string `json:"note,omitempty"`
}

// ErrNoBuildInfo is returned when a binary carries no Go build info: it is
// not a Go program, or its build info was stripped or packed away.
var ErrNoBuildInfo = errors.New("no Go build info")

// upxMagic marks a UPX-packed executable.
var upxMagic = []byte("UPX!")

// ReadModules reads bin's build info. A UPX-packed binary has none
// readable (the packed file hides it): its unpacked twin (`upx -d` into a
// temp file, removed afterwards) is read instead. Without build info it
// returns a Modules whose Note says why, and ErrNoBuildInfo.
func ReadModules(ctx context.Context, bin string) (Modules, error) {
	m := Modules{Binary: bin}
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

// Module names the module that provides pkg: Std for the standard
// library, the main module or the dependency whose path is the longest
// prefix of pkg, or "" when it cannot be told (no module info).
func (m Modules) Module(pkg string) string {
	if m.Main != "" && under(pkg, m.Main) {
		return m.Main
	}
	best := ""
	for p := range m.Deps {
		if under(pkg, p) && len(p) > len(best) {
			best = p
		}
	}
	if best != "" {
		return best
	}
	if isStd(pkg) {
		return Std
	}
	return ""
}

// Version is the version of module mod ("" for std).
func (m Modules) Version(mod string) string {
	if mod == m.Main && mod != "" {
		return m.MainVersion
	}
	return m.Deps[mod]
}

func under(pkg, mod string) bool {
	return pkg == mod || strings.HasPrefix(pkg, mod+"/")
}

// isStd: standard-library import paths have no dot in their first element
// (the go command's own rule); "main" is the main package of a build
// without modules, not the standard library.
func isStd(pkg string) bool {
	first, _, _ := strings.Cut(pkg, "/")
	return first != "main" && !strings.Contains(first, ".")
}
