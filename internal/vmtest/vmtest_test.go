package vmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cavaliergopher/cpio"
	"github.com/google/go-cmp/cmp"
)

func TestInitramfsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "prog")
	if err := os.WriteFile(host, []byte("#!/bin/sh\necho hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := NewInitramfs()
	for _, err := range []error{
		r.AddFile("/bin/prog", host, 0o755),
		r.AddData("/vmtest/plan.json", []byte(`{"steps":[]}`), 0o644),
		r.AddSymlink("/bin/sh", "busybox"),
		r.AddData("/init", []byte("x"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	n, err := r.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) || n%4 != 0 {
		t.Errorf("WriteTo wrote %d bytes, reported %d (newc pads to 4)", buf.Len(), n)
	}
	type ent struct {
		Mode string
		Body string
	}
	got := map[string]ent{}
	cr := cpio.NewReader(&buf)
	for {
		h, err := cr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(cr)
		if h.Linkname != "" { // the reader takes a symlink's body as its target
			body = []byte(h.Linkname)
		}
		got[h.Name] = ent{h.Mode.String(), string(body)}
	}
	want := map[string]ent{
		"bin":              {"040755", ""},
		"bin/prog":         {"0100755", "#!/bin/sh\necho hi\n"},
		"bin/sh":           {"0120777", "busybox"},
		"init":             {"0100755", "x"},
		"vmtest":           {"040755", ""},
		"vmtest/plan.json": {"0100644", `{"steps":[]}`},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("archive (-want +got):\n%s", d)
	}
}

func TestInitramfsErrors(t *testing.T) {
	r := NewInitramfs()
	if err := r.AddData("relative", nil, 0o644); err == nil {
		t.Error("AddData(relative) succeeded, want a refusal")
	}
	if err := r.AddFile("/x", filepath.Join(t.TempDir(), "missing"), 0o755); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("AddFile(missing) = %v, want ErrNotExist", err)
	}
	_ = r.AddData("/a", nil, 0o644)
	_ = r.AddData("/a/b", nil, 0o644)
	if _, err := r.WriteTo(io.Discard); err == nil || !strings.Contains(err.Error(), "both a directory and a file") {
		t.Errorf("WriteTo with /a a file and a directory = %v", err)
	}
}

func TestAddBinaryCopiesLibraries(t *testing.T) {
	// /bin/sh on the host is dynamically linked: its loader and libc come along.
	r := NewInitramfs()
	if err := r.AddBinary("/bin/hostsh", "/bin/sh"); err != nil {
		t.Fatal(err)
	}
	var libc, loader bool
	for p := range r.entries {
		libc = libc || strings.Contains(p, "libc.so")
		loader = loader || strings.Contains(p, "ld-linux")
	}
	if !libc || !loader {
		t.Errorf("AddBinary(/bin/sh) added %v, want libc and the ELF loader", keys(r.entries))
	}
}

func keys(m map[string]entry) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestParseConsole(t *testing.T) {
	var file bytes.Buffer
	if err := WriteFileBlock(&file, "/results/a.jsonl", []byte(`{"kind":"sample"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	console := "[    1.0] kernel noise\r\n" +
		"\n@@vmtest info kernel=6.12.95 cgroup=v2 controllers=cpu,memory\r\n" +
		"@@vmtest step budget start /bin/budget.test\n" +
		"--- PASS: TestX (0.1s)\n" +
		"no newline at the end@@vmtest step budget exit 0 1.500\n" +
		"@@vmtest step run start /bin/coldstart run\n" +
		"@@vmtest step run exit 1 2.000\n" +
		"@@vmtest step run fail exit status 1\n" +
		file.String() +
		"@@vmtest end 1\n"
	o, err := ParseConsole(strings.NewReader(console))
	if err != nil {
		t.Fatal(err)
	}
	wantSteps := []StepResult{
		{Name: "budget", Exit: 0, Seconds: 1.5},
		{Name: "run", Exit: 1, Seconds: 2, Failures: []string{"exit status 1"}},
	}
	if d := cmp.Diff(wantSteps, o.Steps); d != "" {
		t.Errorf("steps (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]string{"kernel": "6.12.95", "cgroup": "v2", "controllers": "cpu,memory"}, o.Info); d != "" {
		t.Errorf("info (-want +got):\n%s", d)
	}
	if got := string(o.Files["/results/a.jsonl"]); got != `{"kind":"sample"}`+"\n" {
		t.Errorf("exported file = %q", got)
	}
	if !o.Ended || o.Status != 1 {
		t.Errorf("Ended, Status = %v, %d; want true, 1", o.Ended, o.Status)
	}
	if d := cmp.Diff([]string{"step run: exit status 1"}, o.Failed()); d != "" {
		t.Errorf("Failed() (-want +got):\n%s", d)
	}
	if strings.Contains(string(o.Console), "\r") {
		t.Error("Console keeps carriage returns")
	}
}

func TestParseConsoleDamage(t *testing.T) {
	var file bytes.Buffer
	_ = WriteFileBlock(&file, "/r", bytes.Repeat([]byte("results "), 40))
	lines := strings.Split(file.String(), "\n")
	lines[2] = "[  3.1] a kernel message inside the block" // replaces base64
	o, _ := ParseConsole(strings.NewReader(strings.Join(lines, "\n")))
	if _, ok := o.Files["/r"]; ok {
		t.Error("a damaged file block was accepted")
	}
	f := o.Failed()
	if len(f) != 2 || !strings.Contains(f[0], "damaged") || !strings.Contains(f[1], "end marker") {
		t.Errorf("Failed() = %q, want the damaged file and the missing end marker", f)
	}
}

func TestKernelsMissing(t *testing.T) {
	dir := t.TempDir()
	_, err := Kernels(dir)
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "scripts/vm-kernel.sh") {
		t.Errorf("Kernels(empty dir) = %v, want ErrMissing naming scripts/vm-kernel.sh", err)
	}
	if _, err := Busybox(dir); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "scripts/vm-kernel.sh") {
		t.Errorf("Busybox(empty dir) = %v, want ErrMissing naming scripts/vm-kernel.sh", err)
	}
	for _, s := range []string{"6.1", "6.12", "5.10"} {
		d := filepath.Join(dir, "kernel-"+s)
		_ = os.MkdirAll(d, 0o755)
		_ = os.WriteFile(filepath.Join(d, "vmlinuz"), nil, 0o644)
	}
	ks, err := Kernels(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range ks {
		got = append(got, k.Series)
	}
	if d := cmp.Diff([]string{"6.12", "6.1", "5.10"}, got); d != "" {
		t.Errorf("Kernels order (-want +got):\n%s", d)
	}
}

func TestQEMUMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Machine{Kernel: "/nonexistent"}.Run(context.Background(), "/nonexistent")
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "qemu-system-x86") || !strings.Contains(err.Error(), "setup.sh") {
		t.Errorf("Run without qemu = %v, want ErrMissing saying how to install qemu-system-x86", err)
	}
}

// shellGuest writes an initramfs whose only step runs script under
// busybox sh, and returns it with the newest cached kernel.
func shellGuest(t *testing.T, name, script string) (img string, kernel Kernel) {
	t.Helper()
	_, kernels, busybox := guestTools(t)
	dir := t.TempDir()
	initBin := filepath.Join(dir, "init")
	goCmd(t, "build", "-o", initBin, "./internal/vmtest/guestinit")
	plan, err := json.Marshal(Plan{Steps: []Step{{Name: name, Argv: []string{"/bin/sh", "-c", script}, Timeout: 10 * time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	r := NewInitramfs()
	_ = r.AddFile("/init", initBin, 0o755)
	_ = r.AddFile("/bin/busybox", busybox, 0o755)
	_ = r.AddSymlink("/bin/sh", "busybox")
	_ = r.AddData(PlanPath, plan, 0o644)
	img = filepath.Join(dir, name+".cpio")
	if err := r.WriteFile(img); err != nil {
		t.Fatal(err)
	}
	return img, kernels[0]
}

// TestGuestHangKilled boots a guest whose only step never ends: Run kills
// qemu once its console has been silent for SilenceTimeout, and says so
// with the console's tail. (A fixed whole-run timeout was not: a host at
// load 34 took longer than 90 s to boot the guest at all.)
func TestGuestHangKilled(t *testing.T) {
	t.Parallel() // mostly idle: overlaps the guest test's builds and boots
	img, k := shellGuest(t, "hang", "echo hanging now; while :; do sleep 1; done")
	silence := 20 * time.Second
	o, err := Machine{Kernel: k.Path, CPUs: 1, MemoryMiB: 256, Timeout: 10 * time.Minute, SilenceTimeout: silence}.Run(context.Background(), img)
	t.Logf("Run: %v", err)
	if err == nil || !strings.Contains(err.Error(), "printed nothing for 20s: killed") || !strings.Contains(err.Error(), "hanging now") {
		t.Errorf("Run of a hanging guest = %v, want killed after %v of silence with the console tail", err, silence)
	}
	if o == nil || o.Ended {
		t.Errorf("outcome %+v: want one without an end marker", o)
	}
}

// TestGuestKernelPanic crashes the guest kernel on purpose (sysrq c): Run
// reports ErrKernelPanic with the panic line, which is what lets the guest
// test tell the emulator failing from the budget tests failing.
func TestGuestKernelPanic(t *testing.T) {
	t.Parallel() // mostly idle, like TestGuestHangKilled
	img, k := shellGuest(t, "crash", "echo 1 >/proc/sys/kernel/sysrq; echo c >/proc/sysrq-trigger")
	o, err := Machine{Kernel: k.Path, CPUs: 1, MemoryMiB: 256, Timeout: 10 * time.Minute, SilenceTimeout: time.Minute}.Run(context.Background(), img)
	t.Logf("Run: %v", err)
	if !errors.Is(err, ErrKernelPanic) || !strings.Contains(err.Error(), "sysrq") {
		t.Errorf("Run of a guest whose kernel crashed = %v, want ErrKernelPanic naming the sysrq crash", err)
	}
	if o == nil || o.Ended || !strings.HasPrefix(o.KernelPanic, "Kernel panic - not syncing") {
		t.Errorf("outcome %+v: want no end marker and the panic line", o)
	}
}
