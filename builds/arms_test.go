package builds

import (
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/rtmetrics"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"

	"github.com/coldstart-go/coldstart/internal/require"
)

// testCache is shared by the tests that build the sample server, so each
// arm is built (and the PGO profile collected) once per test binary.
var testCache string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "coldstart-builds-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testCache = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleDir is the coldstart checkout this test runs in.
func moduleDir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := moduleRoot(wd, SampleModule)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

var sample struct {
	once     sync.Once
	arts     []Artifact
	errs     []error
	progress string
}

var sampleArms = []string{"default", "static", "upx", "pgo"}

// sampleOptions build the pgo arm with a fixed profile (testdata/echo.pgo,
// collected by this package from the sample server, note beside it): a new
// profile changes every package's compile and costs minutes on 2 cores,
// where a fixed one lets the Go build cache serve repeated test runs.
// Collection is tested on its own in TestCollectProfile.
func sampleOptions(progress *bytes.Buffer) Options {
	prof, _ := filepath.Abs("testdata/echo.pgo")
	return Options{CacheDir: testCache, PGOProfile: prof, Progress: progress}
}

// sampleBuilds builds every arm of the sample server once.
func sampleBuilds(t *testing.T) ([]Artifact, []error) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every arm of the sample server (~1 min cold); skipped in -short mode")
	}
	if _, err := exec.LookPath("upx"); err != nil {
		require.Skipf(t, require.UPX, "upx not installed (sudo scripts/setup.sh)")
	}
	sample.once.Do(func() {
		var progress bytes.Buffer
		src := Source{Pkg: SamplePkg, Dir: moduleDir(t)}
		sample.arts, sample.errs = BuildAll(context.Background(), src, sampleArms, sampleOptions(&progress))
		sample.progress = progress.String()
		t.Logf("progress:\n%s", sample.progress)
	})
	return sample.arts, sample.errs
}

func TestArmsBuildAndServe(t *testing.T) {
	arts, errs := sampleBuilds(t)
	byArm := map[string]Artifact{}
	for i, arm := range sampleArms {
		if errs[i] != nil {
			t.Fatalf("BuildAll: %s arm: %v", arm, errs[i])
		}
		a := arts[i]
		byArm[arm] = a
		if a.Arm != arm {
			t.Errorf("artifact %d arm = %q, want %q", i, a.Arm, arm)
		}
		sum, n, err := sumFile(a.Path)
		if err != nil {
			t.Fatalf("%s arm: %v", arm, err)
		}
		if sum != a.SHA256 || n != a.SizeBytes || n == 0 {
			t.Errorf("%s arm: file sha256 %s size %d, artifact says %s %d", arm, sum, n, a.SHA256, a.SizeBytes)
		}
		if a.GoVersion == "" || len(a.Command) == 0 || a.BuildMs <= 0 || a.Cached {
			t.Errorf("%s arm: incomplete record %+v", arm, a)
		}
		if last := a.Command[len(a.Command)-1]; !strings.Contains(last, a.Path) {
			t.Errorf("%s arm: last command %q does not name the artifact %s", arm, last, a.Path)
		}
		t.Logf("%s: %d bytes, %.0f ms, flags %q", arm, a.SizeBytes, a.BuildMs, a.Flags)
	}

	// static: no cgo, trimmed, stripped.
	st := byArm["static"]
	if bi, err := buildinfo.ReadFile(st.Path); err != nil {
		t.Errorf("static arm build info: %v", err)
	} else if got := settings(bi)["CGO_ENABLED"]; got != "0" {
		t.Errorf("static arm CGO_ENABLED = %q, want 0", got)
	}
	if st.SizeBytes >= byArm["default"].SizeBytes {
		t.Errorf("static arm %d bytes, not smaller than default %d", st.SizeBytes, byArm["default"].SizeBytes)
	}
	// upx: really packed by upx, smaller than what it packed.
	ux := byArm["upx"]
	if ux.UPXVersion == "" || !strings.Contains(ux.Command[len(ux.Command)-1], "upx") {
		t.Errorf("upx arm: version %q, last command %q", ux.UPXVersion, ux.Command[len(ux.Command)-1])
	}
	if out, err := exec.Command("upx", "-t", ux.Path).CombinedOutput(); err != nil {
		t.Errorf("upx -t %s: %v\n%s", ux.Path, err, out)
	}
	if ux.SizeBytes >= st.SizeBytes {
		t.Errorf("upx arm %d bytes, not smaller than static %d", ux.SizeBytes, st.SizeBytes)
	}
	// pgo: -pgo= in its build info, other bytes than default, profile kept.
	pg := byArm["pgo"]
	bi, err := buildinfo.ReadFile(pg.Path)
	if err != nil {
		t.Fatalf("pgo arm build info: %v", err)
	}
	if got := settings(bi)["-pgo"]; got == "" {
		t.Errorf("pgo arm build info has no -pgo setting: %v", bi.Settings)
	}
	if pg.SHA256 == byArm["default"].SHA256 {
		t.Errorf("pgo arm has the default arm's sha256 %s", pg.SHA256)
	}
	b, err := os.ReadFile(pg.Profile)
	if err != nil || CheckProfile(b) != nil {
		t.Errorf("pgo arm profile %s: read %v, check %v", pg.Profile, err, CheckProfile(b))
	}
	for _, arm := range sampleArms {
		t.Run(arm+"/serves", func(t *testing.T) { startAndCheck(t, byArm[arm], nil) })
	}
}

func settings(bi *buildinfo.BuildInfo) map[string]string {
	m := map[string]string{}
	for _, s := range bi.Settings {
		m[s.Key] = s.Value
	}
	return m
}

// startAndCheck starts a, waits for a healthy gRPC reply, and stops it.
func startAndCheck(t *testing.T, a Artifact, env []string) {
	t.Helper()
	ctx := context.Background()
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	inst, err := launch.Process{}.Launch(ctx, launch.Spec{Arm: a.Arm, Path: a.Path, Env: env, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(ctx)
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{Timeout: 20 * time.Second}); err != nil {
		t.Fatalf("%s arm %s: %v", a.Arm, a.Path, err)
	}
}

func TestCacheReusesSample(t *testing.T) {
	first, errs := sampleBuilds(t)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	src := Source{Pkg: SamplePkg, Dir: moduleDir(t)}
	arts, errs := BuildAll(context.Background(), src, sampleArms, sampleOptions(&progress))
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i, a := range arts {
		if !a.Cached {
			t.Errorf("second build of %s arm: Cached false", a.Arm)
		}
		want := first[i]
		want.Cached = true
		if diff := cmp.Diff(want, a); diff != "" {
			t.Errorf("second build of %s arm differs (-first +second):\n%s", a.Arm, diff)
		}
	}
	for _, want := range []string{"default: cached", "upx: cached", "pgo: cached"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
}

const tinyMod = "module example.com/tiny\n\ngo 1.24\n"

const tinyMain = `package main

import (
	"fmt"
	"os"
)

var greeting = "hello"

func main() { fmt.Fprintln(os.Stdout, greeting) }
`

// tinyModule writes a module with one main package (./cmd/tiny) and files.
func tinyModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	all := map[string]string{"go.mod": tinyMod, "cmd/tiny/main.go": tinyMain}
	for k, v := range files {
		all[k] = v
	}
	for name, body := range all {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestCacheRebuildsChangedSource(t *testing.T) {
	dir := tinyModule(t, nil)
	src := Source{Pkg: "./cmd/tiny", Dir: dir}
	o := Options{CacheDir: t.TempDir()}
	build := func() Artifact {
		t.Helper()
		arts, errs := BuildAll(context.Background(), src, []string{"default"}, o)
		if errs[0] != nil {
			t.Fatal(errs[0])
		}
		return arts[0]
	}
	a1 := build()
	a2 := build()
	if a1.Cached || !a2.Cached || a2.SHA256 != a1.SHA256 {
		t.Fatalf("first Cached %v, second Cached %v (sha %s then %s): want a miss then a hit", a1.Cached, a2.Cached, a1.SHA256, a2.SHA256)
	}
	// A new file in the package changes the key.
	if err := os.WriteFile(filepath.Join(dir, "cmd/tiny/more.go"), []byte("package main\n\nfunc init() { greeting = \"changed\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a3 := build()
	if a3.Cached || a3.SHA256 == a1.SHA256 {
		t.Errorf("after a source change: Cached %v, sha %s (was %s): want a rebuild", a3.Cached, a3.SHA256, a1.SHA256)
	}
	out, err := exec.Command(a3.Path).Output()
	if err != nil || strings.TrimSpace(string(out)) != "changed" {
		t.Errorf("rebuilt binary printed %q, %v; want changed", out, err)
	}
	// The instrumented build is another artifact.
	o.Instrument = true
	a4 := build()
	if a4.Cached || !a4.Instrumented || a4.SHA256 == a3.SHA256 {
		t.Errorf("instrumented build: Cached %v, Instrumented %v, same sha %v: want a new instrumented artifact", a4.Cached, a4.Instrumented, a4.SHA256 == a3.SHA256)
	}
}

func TestBadInput(t *testing.T) {
	dir := tinyModule(t, map[string]string{
		"cmd/broken/main.go": "package main\n\nfunc main() { undefinedThing() }\n",
		"lib/lib.go":         "package lib\n",
		"notprofile.pprof":   "this is text, not a profile\n",
	})
	tests := []struct {
		name string
		src  Source
		arms []string
		o    Options
		want []string // substrings of the error
	}{
		{"unknown arm", Source{Pkg: "./cmd/tiny", Dir: dir}, []string{"gcc"}, Options{},
			[]string{`unknown arm "gcc" (known: default, pgo, static, upx`}},
		{"package not found", Source{Pkg: "./cmd/nope", Dir: dir}, []string{"default"}, Options{},
			[]string{"./cmd/nope", "directory not found"}},
		{"compile error", Source{Pkg: "./cmd/broken", Dir: dir}, []string{"default"}, Options{},
			[]string{"build ./cmd/broken (default arm)", "example.com/tiny/cmd/broken", "undefined: undefinedThing"}},
		{"not a main package", Source{Pkg: "./lib", Dir: dir}, []string{"static"}, Options{},
			[]string{"./lib", "not a main package"}},
		{"profile missing", Source{Pkg: "./cmd/tiny", Dir: dir}, []string{"pgo"}, Options{PGOProfile: filepath.Join(dir, "missing.pprof")},
			[]string{filepath.Join(dir, "missing.pprof"), "no such file"}},
		{"not a profile", Source{Pkg: "./cmd/tiny", Dir: dir}, []string{"pgo"}, Options{PGOProfile: filepath.Join(dir, "notprofile.pprof")},
			[]string{filepath.Join(dir, "notprofile.pprof"), "not a pprof profile"}},
		{"binary for static", Source{Bin: "/bin/true"}, []string{"static"}, Options{},
			[]string{"static arm of /bin/true", "needs a Go package"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.CacheDir = t.TempDir()
			_, errs := BuildAll(context.Background(), tt.src, tt.arms, tt.o)
			if errs[0] == nil {
				t.Fatalf("BuildAll(%+v, %v) succeeded, want an error", tt.src, tt.arms)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs[0].Error(), w) {
					t.Errorf("BuildAll(%+v, %v) error = %q, want it to contain %q", tt.src, tt.arms, errs[0], w)
				}
			}
		})
	}
}

func TestParseArms(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"default", []string{"default"}, ""},
		{"upx, default,upx", []string{"upx", "default"}, ""},
		{"gcc", nil, `unknown arm "gcc" (known: default, pgo, static, upx`},
		{",", nil, "no arms named"},
	}
	for _, tt := range tests {
		got, err := ParseArms(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrUnknownArm) && tt.in == "gcc" {
				t.Errorf("ParseArms(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseArms(%q): %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseArms(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestUPXMissing(t *testing.T) {
	dir := tinyModule(t, nil)
	o := Options{CacheDir: t.TempDir(), UPX: filepath.Join(t.TempDir(), "upx")}
	arts, errs := BuildAll(context.Background(), Source{Pkg: "./cmd/tiny", Dir: dir}, []string{"upx", "default"}, o)
	if !errors.Is(errs[0], ErrUPXMissing) || !strings.Contains(errs[0].Error(), "apt-get install") {
		t.Errorf("upx arm error = %v, want ErrUPXMissing with the install command", errs[0])
	}
	if errs[1] != nil || arts[1].Path == "" {
		t.Errorf("default arm beside a missing upx: %v, %+v", errs[1], arts[1])
	}
}

func TestPrebuiltBinary(t *testing.T) {
	if _, err := exec.LookPath("upx"); err != nil {
		require.Skipf(t, require.UPX, "upx not installed (sudo scripts/setup.sh)")
	}
	dir := tinyModule(t, nil)
	o := Options{CacheDir: t.TempDir()}
	arts, errs := BuildAll(context.Background(), Source{Pkg: "./cmd/tiny", Dir: dir}, []string{"static"}, o)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	bin, binSum := arts[0].Path, arts[0].SHA256
	arts, errs = BuildAll(context.Background(), Source{Bin: bin}, []string{"default", "upx"}, o)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if arts[0].Path != bin || arts[0].Flags != "as-is" || arts[0].SHA256 != binSum {
		t.Errorf("default arm of a binary = %+v, want it as-is", arts[0])
	}
	if arts[1].SizeBytes >= arts[0].SizeBytes || arts[1].UPXVersion == "" {
		t.Errorf("upx arm of a binary = %+v, want it packed smaller than %d", arts[1], arts[0].SizeBytes)
	}
	out, err := exec.Command(arts[1].Path).Output()
	if err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Errorf("packed binary printed %q, %v", out, err)
	}

	// --lzma is another artifact, packed with that flag.
	o.UPXLevel = UPXLZMA
	lz, errs := BuildAll(context.Background(), Source{Bin: bin}, []string{"upx"}, o)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	if lz[0].Cached || lz[0].SHA256 == arts[1].SHA256 || !strings.Contains(lz[0].Command[len(lz[0].Command)-1], "--lzma") {
		t.Errorf("upx --lzma artifact = %+v, want a new artifact packed with --lzma", lz[0])
	}
	if out, err := exec.Command(lz[0].Path).Output(); err != nil || strings.TrimSpace(string(out)) != "hello" {
		t.Errorf("lzma-packed binary printed %q, %v", out, err)
	}
}

// TestInstrumentedServer builds a gRPC server without the Echo service (a
// user's server) with the debug hook, and reads its runtime metrics and a
// CPU profile through the hook's listener.
func TestInstrumentedServer(t *testing.T) {
	o := Options{CacheDir: testCache, Instrument: true}
	src := Source{Pkg: "./builds/testdata/healthserver", Dir: moduleDir(t)}
	arts, errs := BuildAll(context.Background(), src, []string{"default"}, o)
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	a := arts[0]
	if !a.Instrumented {
		t.Errorf("artifact Instrumented false")
	}
	ctx := context.Background()
	target, err := prober.FreeTCP()
	if err != nil {
		t.Fatal(err)
	}
	debug, err := prober.FreeTCP()
	for i := 0; err == nil && debug.Address == target.Address && i < 10; i++ {
		debug, err = prober.FreeTCP() // FreeTCP closes the port it found: two calls may agree
	}
	if err != nil {
		t.Fatal(err)
	}
	inst, err := launch.Process{}.Launch(ctx, launch.Spec{Arm: "default", Path: a.Path, Target: target,
		Env: []string{rtmetrics.EnvAddr + "=" + debug.Address}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(ctx)
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := rtmetrics.Fetch(ctx, debug.Address)
	if err != nil {
		t.Fatalf("rtmetrics.Fetch from the hook: %v", err)
	}
	if s.AllocBytes == 0 || s.GoMaxProcs == 0 || s.Goroutines == 0 {
		t.Errorf("hook snapshot = %+v, want allocations, GOMAXPROCS and goroutines", s)
	}
	// The JSON has exactly rtmetrics.Snapshot's keys.
	resp, err := http.Get("http://" + debug.Address + rtmetrics.Path)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	wb, _ := json.Marshal(rtmetrics.Read())
	var want map[string]any
	_ = json.Unmarshal(wb, &want)
	if diff := cmp.Diff(keys(want), keys(got)); diff != "" {
		t.Errorf("hook JSON keys differ from rtmetrics.Snapshot (-want +got):\n%s", diff)
	}
	resp, err = http.Get("http://" + debug.Address + "/debug/pprof/profile?seconds=1")
	if err != nil {
		t.Fatal(err)
	}
	prof := new(bytes.Buffer)
	_, err = prof.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !bytes.HasPrefix(prof.Bytes(), []byte{0x1f, 0x8b}) {
		t.Errorf("hook CPU profile: status %d, %d bytes, %v; want a gzipped profile", resp.StatusCode, prof.Len(), err)
	}
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestCollectedProfileStored checks what builds does around a profile
// collector (the collecting itself is pgocollect's, tested there): it hands
// the collector the default arm built with the debug hook, stores the
// profile and its note, reuses them on the next call without collecting,
// and refuses what is not a profile.
func TestCollectedProfileStored(t *testing.T) {
	good, err := os.ReadFile("testdata/echo.pgo")
	if err != nil {
		t.Fatal(err)
	}
	src := Source{Pkg: SamplePkg, Dir: moduleDir(t)}
	var calls []Artifact
	collect := func(ctx context.Context, bin Artifact, secs int, log io.Writer) ([]byte, ProfileNote, error) {
		calls = append(calls, bin)
		return good, ProfileNote{Server: bin.Path, DurationS: float64(secs), Load: "test", Calls: 1}, nil
	}
	var progress bytes.Buffer
	o := Options{CacheDir: t.TempDir(), PGODuration: 1500 * time.Millisecond, Progress: &progress, CollectProfile: collect}
	p, err := o.withDefaults().profile(context.Background(), src)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	if len(calls) != 1 || !calls[0].Instrumented || calls[0].Arm != "default" {
		t.Fatalf("collector called with %+v, want once with the instrumented default arm", calls)
	}
	if b, err := os.ReadFile(p.Path); err != nil || !bytes.Equal(b, good) {
		t.Errorf("stored profile %s: %v, want the collected bytes", p.Path, err)
	}
	var note ProfileNote
	if nb, err := os.ReadFile(p.Note); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(nb, &note); err != nil {
		t.Fatal(err)
	}
	if note.Load != "test" || note.DurationS != 2 {
		t.Errorf("stored note = %+v, want the collector's, over 2 s (1.5 s rounded up)", note)
	}
	progress.Reset()
	p2, err := o.withDefaults().profile(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || p2.SHA256 != p.SHA256 || !strings.Contains(progress.String(), "reusing") {
		t.Errorf("second call: %d collections, sha %s (first %s), progress %q: want the stored profile reused", len(calls), p2.SHA256, p.SHA256, progress.String())
	}
	if p2.Load != "test" {
		t.Errorf("reused profile's load = %q, want the note's", p2.Load)
	}
	// Another load (the user's method, other server arguments) is another
	// profile: collected anew, and said in the progress line.
	progress.Reset()
	o.ProfileLoad = "calls of /shop.v1.Cart/Add, server args [\"--listen\" \"{addr}\"]"
	if _, err := o.withDefaults().profile(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || !strings.Contains(progress.String(), "under calls of /shop.v1.Cart/Add") {
		t.Errorf("another load: %d collections, progress %q: want a new one, the load said", len(calls), progress.String())
	}

	o.CacheDir = t.TempDir()
	o.CollectProfile = func(context.Context, Artifact, int, io.Writer) ([]byte, ProfileNote, error) {
		return []byte("not a profile"), ProfileNote{}, nil
	}
	if _, err := o.withDefaults().profile(context.Background(), src); !errors.Is(err, ErrNotProfile) {
		t.Errorf("collector returning junk: err = %v, want ErrNotProfile", err)
	}
	o.CollectProfile = nil
	if _, err := o.withDefaults().profile(context.Background(), src); err == nil || !strings.Contains(err.Error(), "--pgo-profile") {
		t.Errorf("no collector: err = %v, want one naming --pgo-profile", err)
	}
}

func TestCheckProfile(t *testing.T) {
	good, err := os.ReadFile("testdata/echo.pgo")
	if err != nil {
		t.Fatal(err)
	}
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	tests := []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"collected profile", good, true},
		{"empty", nil, false},
		{"text", []byte("hello, world\n"), false},
		{"gzipped text", gz([]byte("hello, world\n")), false},
		{"gzipped empty protobuf", gz(nil), false},
		{"truncated", good[:len(good)/2], false},
	}
	for _, tt := range tests {
		err := CheckProfile(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("CheckProfile(%s) = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrNotProfile) {
			t.Errorf("CheckProfile(%s) = %v, want ErrNotProfile", tt.name, err)
		}
	}
}
