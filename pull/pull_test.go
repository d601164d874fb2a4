package pull

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/coldstart-go/coldstart/internal/testservers"
	"github.com/coldstart-go/coldstart/record"
)

func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

func TestParseBandwidth(t *testing.T) {
	tests := []struct {
		in      string
		want    Bandwidth
		wantErr string
	}{
		{in: "10Mbit", want: 10_000_000},
		{in: "100mbit", want: 100_000_000},
		{in: "1Gbit", want: 1_000_000_000},
		{in: "2.5Gbit/s", want: 2_500_000_000},
		{in: "500kbit", want: 500_000},
		{in: "max", want: Max},
		{in: "0", wantErr: "want a number and a unit"},
		{in: "0Mbit", wantErr: "more than 0"},
		{in: "-5Mbit", wantErr: "more than 0"},
		{in: "fastMbit", wantErr: "want a number and a unit"},
		{in: "10MB", wantErr: "want a number and a unit"},
		{in: "1bit", wantErr: "below 8kbit"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseBandwidth(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseBandwidth(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseBandwidth(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if back, err := ParseBandwidth(got.String()); err != nil || back != got {
				t.Errorf("ParseBandwidth(%q.String() = %q) = %v, %v", tt.in, got.String(), back, err)
			}
		})
	}
}

func TestParseLists(t *testing.T) {
	if got, err := ParseCompressions("gzip, zstd,gzip"); err != nil || len(got) != 2 {
		t.Errorf("ParseCompressions = %v, %v; want [gzip zstd]", got, err)
	}
	if _, err := ParseCompressions("gzip,lz4"); err == nil || !strings.Contains(err.Error(), `unknown compression "lz4" (known: gzip, zstd)`) {
		t.Errorf("ParseCompressions(lz4) error = %v", err)
	}
	if _, err := ParseLayerings("single,triple"); err == nil || !strings.Contains(err.Error(), `"triple"`) {
		t.Errorf("ParseLayerings(triple) error = %v", err)
	}
	if _, err := ParseBandwidths(""); err == nil {
		t.Error("ParseBandwidths(\"\") = nil error")
	}
}

func TestRegistryPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	r, err := StartRegistry(port)
	if err == nil {
		r.Close()
		t.Fatalf("StartRegistry(%d) on a taken port: no error", port)
	}
	if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Errorf("StartRegistry(%d) = %v; want ErrPortInUse naming the port", port, err)
	}
}

// TestBandwidthCap pulls an incompressible layer sized for about 0.4 s at
// two caps, three times each, interleaved, in one run. The token bucket
// guarantees the upper bound, checked on every pull; a busy machine can only
// slow a transfer, so the lower side is checked on the fastest of each cap's
// pulls, as the ratio of the two caps' rates.
func TestBandwidthCap(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: transfers take seconds")
	}
	ctx := context.Background()
	reg, err := StartRegistry(0)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	caps := []Bandwidth{10_000_000, 100_000_000}
	refs := map[Bandwidth]string{}
	for _, bw := range caps {
		img, err := random.Image(int64(bw.BytesPerSecond()*0.4), 1)
		if err != nil {
			t.Fatal(err)
		}
		if refs[bw], err = reg.Push(ctx, record.PullVariant{Arm: "random-" + bw.String(), Compression: record.Gzip, Layering: record.SingleLayer}, 1, img); err != nil {
			t.Fatal(err)
		}
	}
	best := map[Bandwidth]float64{}
	for round := 0; round < 3; round++ {
		for _, bw := range caps {
			node, err := NewNode(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			reg.SetBandwidth(bw)
			p, err := node.Pull(ctx, refs[bw])
			reg.SetBandwidth(Max)
			node.Close()
			if err != nil {
				t.Fatal(err)
			}
			rate := float64(p.LayerBytes) * 8 / p.Layers.Seconds()
			best[bw] = max(best[bw], rate)
			t.Logf("cap %s: %d bytes in %v = %.2f Mbit/s (%.3f of the cap)", bw, p.LayerBytes, p.Layers, rate/1e6, rate/float64(bw))
			if rate > 1.1*float64(bw) {
				t.Errorf("cap %s: measured %.2f Mbit/s, more than 10%% over the cap", bw, rate/1e6)
			}
		}
	}
	ratio := best[caps[1]] / best[caps[0]]
	want := float64(caps[1]) / float64(caps[0])
	if ratio < 0.9*want || ratio > 1.1*want {
		t.Errorf("fastest rate at %s / at %s = %.2f, want %.0f ± 10%%", caps[1], caps[0], ratio, want)
	}
}

// TestUnpackLayerStaysInside: pulled layers are untrusted; whatever they
// hold, nothing lands outside the root filesystem (the shared unpacker's own
// tests cover the rules in detail; this checks pull goes through it).
func TestUnpackLayerStaysInside(t *testing.T) {
	tests := []struct {
		name    string
		entries func(sentinel string) []tar.Header
	}{
		{name: "dotdot", entries: func(string) []tar.Header {
			return []tar.Header{{Name: "../sentinel/escape", Typeflag: tar.TypeReg, Mode: 0o644}}
		}},
		{name: "through own symlink", entries: func(sentinel string) []tar.Header {
			return []tar.Header{
				{Name: "out", Typeflag: tar.TypeSymlink, Linkname: sentinel},
				{Name: "out/x", Typeflag: tar.TypeReg, Mode: 0o644},
			}
		}},
		{name: "hard link to outside", entries: func(sentinel string) []tar.Header {
			return []tar.Header{
				{Name: "out", Typeflag: tar.TypeSymlink, Linkname: sentinel},
				{Name: "pw", Typeflag: tar.TypeLink, Linkname: "out/secret"},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			sentinel := filepath.Join(parent, "sentinel")
			dir := filepath.Join(parent, "root")
			for _, d := range []string{sentinel, dir} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(sentinel, "secret"), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, h := range tt.entries(sentinel) {
				if err := tw.WriteHeader(&h); err != nil {
					t.Fatal(err)
				}
			}
			tw.Close()
			_, err := unpackLayer(context.Background(), &buf, dir)
			t.Logf("unpackLayer: %v", err)
			ents, _ := os.ReadDir(sentinel)
			if len(ents) != 1 {
				t.Errorf("sentinel dir outside the root holds %d entries after the unpack, want its 1", len(ents))
			}
			if fi, err := os.Stat(filepath.Join(sentinel, "secret")); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Errorf("the file outside was linked into the root: %v", err)
			}
		})
	}
}

// countEntries counts what is in dir (nodes left behind).
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func refused(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return true
}

// TestRunSampleServer runs a small campaign on the real sample server: two
// compressions, both layerings, two bandwidths, started after each pull.
func TestRunSampleServer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the sample server and pulls for seconds")
	}
	bin := testservers.BuildPackage(t, testservers.Echo)
	work := t.TempDir()
	port := freePort(t)
	before := countEntries(t, work)
	var recorded int
	rows, err := Run(context.Background(), Config{
		Binaries:     []Binary{{Arm: "static", Path: bin}},
		Compressions: []record.Compression{record.Gzip, record.Zstd},
		Layerings:    []record.Layering{record.SingleLayer, record.SplitLayers},
		Bandwidths:   []Bandwidth{Max, 200_000_000},
		Port:         port,
		WorkDir:      work,
		Starter:      ProcessStarter{},
		Record:       func(record.PullRow) error { recorded++; return nil },
		Progress:     logWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 * 2 * 2; len(rows) != want || recorded != want {
		t.Fatalf("Run gave %d rows (%d recorded), want %d", len(rows), recorded, want)
	}
	if after := countEntries(t, work); after != before {
		t.Errorf("work dir holds %d entries after the run, %d before", after, before)
	}
	if !refused(port) {
		t.Errorf("registry still answers on port %d after Run", port)
	}
	second := map[record.Layering]record.PullRow{}
	for _, r := range rows {
		if r.WireBytes < r.LayerBytes || r.LayerBytes <= 0 {
			t.Errorf("%s deploy %d: wire_bytes %d < layer_bytes %d", r.PullVariant, r.Deploy, r.WireBytes, r.LayerBytes)
		}
		if r.Deploy == 1 {
			if r.LayersReused != 0 || r.ColdStartMs <= 0 || r.WarmStartMs <= 0 || r.NodeToFirstRPCMs <= r.ImageReadyMs {
				t.Errorf("%s deploy 1: %+v", r.PullVariant, r)
			}
			if r.ResidentAfter == nil || r.ResidentAfter.Resident >= r.ResidentBefore.Resident {
				t.Errorf("%s: eviction left %v of %v resident pages", r.PullVariant, r.ResidentAfter, r.ResidentBefore)
			}
		}
		if r.Deploy == 2 && r.Compression == record.Gzip && r.Bandwidth == "max" {
			second[r.Layering] = r
		}
	}
	// A second deploy of the split image fetches only the binary's layer:
	// fewer bytes than the single-layer image, which fetches all of it.
	if s, o := second[record.SplitLayers], second[record.SingleLayer]; s.LayersReused != 1 || s.LayersPulled != 1 || o.LayersPulled != 1 || s.LayerBytes >= o.LayerBytes {
		t.Errorf("second deploy: split %+v, single %+v; want split to reuse its base layer and fetch fewer bytes", s, o)
	}
	sums := record.SummarizePulls(rows)
	if len(sums) != 16 {
		t.Errorf("SummarizePulls: %d summaries, want 16", len(sums))
	}
	if be := record.PullBreakEvens(rows); len(be) != 4 { // gzip vs zstd, per layering and bandwidth
		t.Errorf("PullBreakEvens: %d, want 4: %+v", len(be), be)
	}
}

// TestRunInterrupted cancels a slow pull: Run returns the context's error,
// with the registry stopped and nothing left in the work dir.
func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	bin := testservers.BuildPackage(t, testservers.Echo)
	stop := errors.New("interrupt signal received")
	// At once as the images are pushed (the interrupt lands between or in
	// the first requests of a pull), and 300 ms later (mid-layer): either
	// way the error says why.
	for _, after := range []time.Duration{0, 300 * time.Millisecond} {
		work := t.TempDir()
		port := freePort(t)
		ctx, cancel := context.WithCancelCause(context.Background())
		defer cancel(nil)
		_, err := Run(ctx, Config{
			Binaries:     []Binary{{Arm: "static", Path: bin}},
			Compressions: []record.Compression{record.Gzip},
			Layerings:    []record.Layering{record.SingleLayer},
			Bandwidths:   []Bandwidth{8_000_000}, // ~1 MB/s: the pull takes seconds
			Port:         port,
			WorkDir:      work,
			Progress: writerFunc(func(line string) {
				if strings.HasPrefix(line, "pull: image") {
					time.AfterFunc(after, func() { cancel(stop) })
				}
			}),
		})
		if !errors.Is(err, stop) {
			t.Fatalf("Run interrupted after %v = %v, want its cause", after, err)
		}
		if n := countEntries(t, work); n != 0 {
			t.Errorf("work dir holds %d entries after an interrupted run", n)
		}
		if !refused(port) {
			t.Errorf("registry still answers on port %d after an interrupted Run", port)
		}
	}
}

// logWriter logs each write, a progress line, to the test.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// writerFunc calls f with each write, a progress line.
type writerFunc func(line string)

func (f writerFunc) Write(p []byte) (int, error) {
	f(string(p))
	return len(p), nil
}
