package campaign

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
)

func TestParseImageArm(t *testing.T) {
	for _, tt := range []struct {
		in, wantErr string
		want        ImageArm
	}{
		{in: "orders=./img", want: ImageArm{Name: "orders", Source: "./img"}},
		{in: "orders=127.0.0.1:5000/acme/orders:v1", want: ImageArm{Name: "orders", Source: "127.0.0.1:5000/acme/orders:v1"}},
		{in: "./img", wantErr: "want NAME=LAYOUT"},
		{in: "=./img", wantErr: "want NAME=LAYOUT"},
		{in: "Orders App=./img", wantErr: `arm name "Orders App"`},
	} {
		got, err := ParseImageArm(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "--") {
				t.Errorf("ParseImageArm(%q) = %v, %v; want an error with %q, naming no flag", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseImageArm(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func needRunc(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("runc not installed (sudo scripts/setup.sh installs it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("runc containers need root")
	}
}

// layerOf is a tar layer of files (path -> content; a nil content is a
// directory), modes 0755 for executables under bin/, 0644 otherwise.
func layerOf(t *testing.T, files [][2]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f[0], Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(f[1]))}
		switch {
		case strings.HasSuffix(f[0], "/"):
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		case strings.Contains(f[0], "/bin/"):
			h.Mode = 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(f[1]))
	}
	tw.Close()
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// thirdPartyImage builds an image the way a team outside coldstart might:
// a shell-less base layer (passwd and group naming user "orders" 10001, a
// tool the next layer deletes with a whiteout), the server at
// /opt/acme/bin/orders-server, entrypoint and user by name, a working
// directory, and Cmd flags the server would not understand (coldstart
// passes none: it runs Entrypoint + Cmd, so Cmd stays empty here).
func thirdPartyImage(t *testing.T) v1.Image {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "orders-server")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./examples/echo")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the server: %v\n%s", err, out)
	}
	server, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	base := layerOf(t, [][2]string{
		{"etc/", ""},
		{"etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\norders:x:10001:10001::/opt/acme:/sbin/nologin\n"},
		{"etc/group", "root:x:0:\norders:x:10001:\n"},
		{"opt/acme/bin/", ""},
		{"opt/acme/bin/migrate-tool", "#!/bin/sh\nexit 1\n"},
	})
	app := layerOf(t, [][2]string{
		{"opt/acme/bin/.wh.migrate-tool", ""},
		{"opt/acme/bin/orders-server", string(server)},
	})
	img, err := mutate.AppendLayers(empty.Image, base, app)
	if err != nil {
		t.Fatal(err)
	}
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/opt/acme/bin/orders-server"}
	cf.Config.User = "orders"
	cf.Config.WorkingDir = "/opt/acme"
	cf.Config.Env = []string{"PATH=/opt/acme/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	return img
}

// uidLauncher records the uid of each started server (from
// /proc/PID/status) before handing the instance on.
type uidLauncher struct {
	launch.Launcher
	uids *[]string
}

func (l uidLauncher) Launch(ctx context.Context, s launch.Spec) (launch.Instance, error) {
	inst, err := l.Launcher.Launch(ctx, s)
	if err == nil {
		*l.uids = append(*l.uids, procUID(inst.PID()))
	}
	return inst, err
}

// procUID is the real uid on the Uid: line of /proc/PID/status.
func procUID(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			return f[1]
		}
	}
	return "?"
}

// TestImageArms runs the third-party image as three --image arms (its OCI
// layout, its tarball, and pushed to a registry on 127.0.0.1 and pulled
// by reference) under a cpus=0 budget, arms interleaved: every arm reaches
// first_rpc through runc's phases, as its image's user.
func TestImageArms(t *testing.T) {
	needRunc(t)
	if testing.Short() {
		t.Skip("builds a server and runs containers")
	}
	img := thirdPartyImage(t)
	dir := t.TempDir()
	lay := filepath.Join(dir, "layout")
	p, err := layout.Write(lay, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	tb := filepath.Join(dir, "orders.tar")
	tag, _ := name.NewTag("acme/orders:v1")
	if err := tarball.WriteToFile(tb, tag, img); err != nil {
		t.Fatal(err)
	}
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	u, _ := url.Parse(reg.URL)
	ref := u.Host + "/acme/orders:v1"
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	wantDigest, _ := img.Digest()

	ctx := context.Background()
	built, err := BuildArms(ctx, ArmsConfig{Images: []ImageArm{
		{Name: "orders-layout", Source: lay}, {Name: "orders-tarball", Source: tb}, {Name: "orders-ref", Source: ref},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := built.Close(); err != nil {
			t.Error(err)
		}
	}()
	if len(built.Arms) != 3 {
		t.Fatalf("arms = %s, want 3 (failed: %v)", ArmNames(built.Arms), built.Err())
	}
	for _, a := range built.Artifacts {
		// A tarball holds Docker's media types, so another digest.
		if a.Arm != "orders-tarball" && a.Digest != wantDigest.String() {
			t.Errorf("%s: digest %s, want %s", a.Arm, a.Digest, wantDigest)
		}
	}
	if got := built.Artifacts[2].Ref; got != u.Host+"/acme/orders@"+wantDigest.String() {
		t.Errorf("pulled arm's ref = %q, want the repository by digest", got)
	}
	var uids []string
	for i := range built.Arms {
		built.Arms[i].Launcher = uidLauncher{built.Arms[i].Launcher, &uids}
	}
	var samples []prober.Sample
	c := ColdStart{Arms: built.Arms, Runs: 2, Budgets: []budget.Budget{{CPUs: []int{0}}}, Wait: prober.WaitOptions{Timeout: 30 * time.Second}}
	sums, err := c.Run(ctx, func(s prober.Sample) error { samples = append(samples, s); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 3 || len(samples) != 9 {
		t.Fatalf("%d summaries, %d samples; want 3 and 9", len(sums), len(samples))
	}
	for _, s := range samples {
		var names []string
		for _, p := range s.Phases {
			names = append(names, p.Name)
		}
		if got := strings.Join(names, ","); got != "bundle_ready,created,process_started,accepting,first_answer,first_rpc" {
			t.Errorf("%s run %d: phases %s", s.Arm, s.Run, got)
		}
		if s.Budget != "cpus=0" {
			t.Errorf("%s run %d: budget %q, want cpus=0", s.Arm, s.Run, s.Budget)
		}
	}
	for _, u := range uids {
		if u != "10001" {
			t.Errorf("a server ran as uid %s, want the image's user orders (10001); all: %v", u, uids)
			break
		}
	}
}
