package builds

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SampleModule is the module path of coldstart itself, whose bundled sample
// server (SamplePkg) is the default target.
const SampleModule = "github.com/coldstart-go/coldstart"

// SamplePkg is the bundled sample server's package, relative to the module
// root.
const SamplePkg = "./examples/echo"

// SampleSource is the bundled sample server, resolved against the root of
// the coldstart checkout that holds the current directory, so it works from
// any directory inside the checkout.
func SampleSource() (Source, error) {
	wd, err := os.Getwd()
	if err != nil {
		return Source{}, fmt.Errorf("find the sample server: %w", err)
	}
	root, err := moduleRoot(wd, SampleModule)
	if err != nil {
		return Source{}, fmt.Errorf("find the sample server %s: %w", SamplePkg, err)
	}
	return Source{Pkg: SamplePkg, Dir: root}, nil
}

// moduleRoot walks up from dir to the go.mod that declares module mod.
func moduleRoot(dir, mod string) (string, error) {
	for d := dir; ; {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[0] == "module" && strings.Trim(fs[1], `"`) == mod {
					f.Close()
					return d, nil
				}
			}
			f.Close()
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("%s is not inside a checkout of %s (name a package instead)", dir, mod)
		}
		d = parent
	}
}

// pkgInfo is what go list says about a main package and the parts of its
// main module it depends on.
type pkgInfo struct {
	ImportPath string
	Dir        string // the main package's directory
	Name       string // its binary name: the directory's base name
	// Hash covers every Go (and cgo, assembly, embedded) file of each package
	// in the main module that the target depends on, and go.mod/go.sum.
	Hash string
}

// listing is a remembered go list result: the same failure is reported to
// every arm without listing again.
type listing struct {
	p   *pkgInfo
	err error
}

type listedPkg struct {
	ImportPath     string
	DepOnly        bool
	Dir            string
	Name           string
	GoFiles        []string
	CgoFiles       []string
	CFiles         []string
	HFiles         []string
	SFiles         []string
	IgnoredGoFiles []string
	EmbedFiles     []string
	Module         *struct {
		Main  bool
		Dir   string
		GoMod string
	}
}

// pkg lists src's main package (memoized per call): its directory and the
// hash of what its build depends on in the main module.
func (o Options) pkg(ctx context.Context, src Source) (*pkgInfo, error) {
	key := src.Dir + "\x00" + src.Pkg
	o.sh.mu.Lock()
	l, ok := o.sh.pkgs[key]
	o.sh.mu.Unlock()
	if ok {
		return l.p, l.err
	}
	p, err := o.listPkg(ctx, src)
	if err != nil && ctx.Err() != nil {
		return nil, err // not remembered: a later call may have time
	}
	o.sh.mu.Lock()
	o.sh.pkgs[key] = listing{p, err}
	o.sh.mu.Unlock()
	return p, err
}

func (o Options) listPkg(ctx context.Context, src Source) (*pkgInfo, error) {
	if src.Pkg == "" {
		return nil, errors.New("no package to build (name a main package, or a binary for the default and upx arms)")
	}
	s := step{dir: src.Dir, name: o.Go, args: []string{"list", "-deps",
		"-json=ImportPath,DepOnly,Dir,Name,GoFiles,CgoFiles,CFiles,HFiles,SFiles,IgnoredGoFiles,EmbedFiles,Module",
		"--", src.Pkg}}
	out, err := s.run(ctx, o.cmdLog())
	if err != nil {
		return nil, fmt.Errorf("list package %s: %w", src.Pkg, err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	var root *listedPkg
	var mine []listedPkg
	goMod := ""
	for {
		var lp listedPkg
		if err := dec.Decode(&lp); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("list package %s: decode go list output: %w", src.Pkg, err)
		}
		if !lp.DepOnly {
			if root != nil {
				return nil, fmt.Errorf("list package %s: names more than one package (%s, %s); name one main package", src.Pkg, root.ImportPath, lp.ImportPath)
			}
			root = &lp
		}
		if lp.Module != nil && lp.Module.Main {
			mine = append(mine, lp)
			goMod = lp.Module.GoMod
		}
	}
	if root == nil {
		return nil, fmt.Errorf("list package %s: go list found no package", src.Pkg)
	}
	if root.Name != "main" {
		return nil, fmt.Errorf("build %s: package %s is not a main package (package %s)", src.Pkg, root.ImportPath, root.Name)
	}
	h := sha256.New()
	sort.Slice(mine, func(i, j int) bool { return mine[i].ImportPath < mine[j].ImportPath })
	for _, lp := range mine {
		fmt.Fprintf(h, "package %s\n", lp.ImportPath)
		var files []string
		for _, fs := range [][]string{lp.GoFiles, lp.CgoFiles, lp.CFiles, lp.HFiles, lp.SFiles, lp.IgnoredGoFiles, lp.EmbedFiles} {
			files = append(files, fs...)
		}
		sort.Strings(files)
		for _, f := range files {
			if err := hashFile(h, f, filepath.Join(lp.Dir, f)); err != nil {
				return nil, fmt.Errorf("hash sources of %s: %w", src.Pkg, err)
			}
		}
	}
	if goMod != "" {
		// vendor/modules.txt (when vendoring) also decides what dependencies
		// are compiled in.
		for _, f := range []string{goMod, strings.TrimSuffix(goMod, ".mod") + ".sum", filepath.Join(filepath.Dir(goMod), "vendor", "modules.txt")} {
			if err := hashFile(h, filepath.Base(f), f); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("hash sources of %s: %w", src.Pkg, err)
			}
		}
	}
	return &pkgInfo{
		ImportPath: root.ImportPath,
		Dir:        root.Dir,
		Name:       filepath.Base(root.Dir),
		Hash:       hex.EncodeToString(h.Sum(nil)),
	}, nil
}

func hashFile(h io.Writer, name, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fh := sha256.New()
	if _, err := io.Copy(fh, f); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	fmt.Fprintf(h, "file %s %x\n", name, fh.Sum(nil))
	return nil
}

// goEnv is the toolchain's identity for cache keys: version, target and
// the settings that change generated code, as go sees them in dir, where
// the build runs (memoized per call and dir): a module elsewhere may pick
// another toolchain (its go.mod's toolchain line) or go.work.
func (o Options) goEnv(ctx context.Context, dir string) (string, error) {
	o.sh.mu.Lock()
	e, ok := o.sh.goEnv[dir]
	o.sh.mu.Unlock()
	if ok {
		return e, nil
	}
	out, err := step{dir: dir, name: o.Go, args: []string{"env", "GOVERSION", "GOOS", "GOARCH", "GOAMD64", "GOARM64", "GOEXPERIMENT", "GOFLAGS", "CGO_ENABLED", "CC", "GOWORK"}}.run(ctx, o.cmdLog())
	if err != nil {
		return "", fmt.Errorf("read go env: %w", err)
	}
	e = string(out)
	o.sh.mu.Lock()
	o.sh.goEnv[dir] = e
	o.sh.mu.Unlock()
	return e, nil
}

// goVersion is the first line of goEnv: "go1.26.8".
func goVersion(env string) string {
	v, _, _ := strings.Cut(env, "\n")
	return v
}

// sumFile is the hex sha256 of a file's content.
func sumFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
