package resultfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/coldstart-go/coldstart/internal/provenance"
)

// writerEnv makes the test binary a results writer (see TestMain): it
// creates a results file in the directory the variable names, prints its
// path, and adds numbered records until it is killed.
const writerEnv = "RESULTFILE_TEST_WRITER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(writerEnv); dir != "" {
		os.Exit(writeForever(dir))
	}
	os.Exit(m.Run())
}

// writeForever is the child of TestSIGKILLKeepsWholeRecords.
func writeForever(dir string) int {
	f, err := Create(dir, "killed", testProv())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(f.Path())
	pad := strings.Repeat("x", 4096) // each rewrite takes a while, so a kill can land inside one
	for i := 0; ; i++ {
		if err := f.Add("sample", map[string]any{"i": i, "pad": pad}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

func testProv() provenance.Provenance {
	return provenance.Provenance{
		Tool: "resultfile-test", Commit: "abc123", GoVersion: "go1.test",
		StartedAt: time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC), Args: []string{"coldstart", "run"},
	}
}

// line is one record as a reader sees it: its kind and its other keys.
type line struct {
	Kind string
	Rest map[string]any
}

// readLines parses every line of path as a reader does, failing the test
// at the first that is not one whole JSON object with a string "kind".
func readLines(t *testing.T, path string) []line {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s does not end in a newline: its last line is cut", path)
	}
	var out []line
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s line %d: %v: %.200q", path, n, err, sc.Text())
		}
		kind, ok := m["kind"].(string)
		if !ok {
			t.Fatalf("%s line %d: no string \"kind\": %.200q", path, n, sc.Text())
		}
		if !strings.HasPrefix(sc.Text(), `{"kind":`) {
			t.Errorf("%s line %d: kind is not the first key: %.80q", path, n, sc.Text())
		}
		delete(m, "kind")
		out = append(out, line{kind, m})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan %s: %v", path, err)
	}
	return out
}

// tempFiles lists the atomic writes' temp files left in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestCreateWritesProvenanceFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results", "nested") // Create makes the directories
	p := testProv()
	f, err := Create(dir, "run", p)
	if err != nil {
		t.Fatal(err)
	}
	if want := Name(dir, "run", p); f.Path() != want {
		t.Errorf("Path() = %q, want %q", f.Path(), want)
	}
	if want := p.StartedAt.Local().Format("20060102-150405") + "_run.jsonl"; filepath.Base(f.Path()) != want {
		t.Errorf("file named %q, want %q", filepath.Base(f.Path()), want)
	}
	ls := readLines(t, f.Path())
	if len(ls) != 1 || ls[0].Kind != "provenance" {
		t.Fatalf("a new file holds %+v, want one provenance line", ls)
	}
	if ls[0].Rest["schema"] != Schema || ls[0].Rest["commit"] != "abc123" || ls[0].Rest["tool"] != "resultfile-test" {
		t.Errorf("provenance line %v, want schema %q, commit and tool", ls[0].Rest, Schema)
	}
	if fi, err := os.Stat(f.Path()); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("stat %s: %v, %v; want mode 0644", f.Path(), fi, err)
	}
}

func TestCreateDoesNotOverwrite(t *testing.T) {
	dir := t.TempDir()
	p := testProv()
	var paths []string
	for i := 0; i < 3; i++ {
		f, err := Create(dir, "run", p) // same second, same label
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add("sample", map[string]int{"file": i}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, f.Path())
	}
	stamp := p.StartedAt.Local().Format("20060102-150405")
	want := []string{stamp + "_run.jsonl", stamp + "_run-2.jsonl", stamp + "_run-3.jsonl"}
	var got []string
	for i, path := range paths {
		got = append(got, filepath.Base(path))
		ls := readLines(t, path)
		if len(ls) != 2 || ls[1].Rest["file"] != float64(i) {
			t.Errorf("%s holds %+v, want its own record (file %d)", path, ls, i)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestCreateInUncreatableDir(t *testing.T) {
	parent := t.TempDir()
	blocker := filepath.Join(parent, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Create(filepath.Join(blocker, "results"), "run", testProv())
	if err == nil || !strings.Contains(err.Error(), "create results dir") || !strings.Contains(err.Error(), blocker) {
		t.Errorf("Create under a regular file = %v, want an error creating the results dir naming %s", err, blocker)
	}
}

// TestEveryAddIsOnDisk: after each Add, the file a reader opens holds the
// provenance and every record added so far, whole, in order, and no temp
// file is left beside it.
func TestEveryAddIsOnDisk(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(dir, "run", testProv())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if err := f.Add("sample", struct {
			Run  int    `json:"run"`
			Note string `json:"note,omitempty"`
		}{i, strings.Repeat("n", i)}); err != nil {
			t.Fatal(err)
		}
		ls := readLines(t, f.Path())
		if len(ls) != i+2 {
			t.Fatalf("after Add #%d the file holds %d lines, want %d", i, len(ls), i+2)
		}
		for j, l := range ls[1:] {
			if l.Kind != "sample" || l.Rest["run"] != float64(j) {
				t.Fatalf("after Add #%d, line %d = %+v, want sample run %d", i, j+2, l, j)
			}
		}
		if tmp := tempFiles(t, dir); len(tmp) != 0 {
			t.Fatalf("after Add #%d, temp files left: %v", i, tmp)
		}
	}
}

// TestOneRecordPerLine: text that looks like a line break or a record
// boundary stays inside its record.
func TestOneRecordPerLine(t *testing.T) {
	f, err := Create(t.TempDir(), "run", testProv())
	if err != nil {
		t.Fatal(err)
	}
	nasty := []string{
		"stderr:\nline two\r\nline three",
		"}\n{\"kind\":\"summary\"}",
		"\u2028\u2029 separators",
		"\x00 nul and \xff invalid UTF-8",
	}
	for _, s := range nasty {
		if err := f.Add("sample", map[string]string{"error": s}); err != nil {
			t.Fatalf("Add(%q) = %v", s, err)
		}
	}
	if err := f.Add("empty", struct{}{}); err != nil {
		t.Fatalf("Add(empty object) = %v", err)
	}
	ls := readLines(t, f.Path())
	if len(ls) != 2+len(nasty) {
		t.Fatalf("file holds %d lines, want %d", len(ls), 2+len(nasty))
	}
	for i, s := range nasty {
		got := ls[1+i].Rest["error"]
		want := strings.ToValidUTF8(s, "\uFFFD")
		if ls[1+i].Kind != "sample" || got != want {
			t.Errorf("line %d = %+v, want sample with error %q", i+2, ls[1+i], want)
		}
	}
	if last := ls[len(ls)-1]; last.Kind != "empty" || len(last.Rest) != 0 {
		t.Errorf("empty record read back as %+v, want kind empty and nothing else", last)
	}
}

// TestMalformedRecordsRefused: a record that is not a JSON object, cannot
// be encoded, or carries its own "kind" is refused with an error naming
// its kind, and the file is left as it was; later records still go in.
func TestMalformedRecordsRefused(t *testing.T) {
	dir := t.TempDir()
	f, err := Create(dir, "run", testProv())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Add("sample", map[string]int{"run": 0}); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, want string
		v          any
	}{
		{"number", "not a JSON object", 42},
		{"string", "not a JSON object", "sample"},
		{"array", "not a JSON object", []int{1, 2}},
		{"nil", "not a JSON object", nil},
		{"nil map", "not a JSON object", map[string]int(nil)},
		{"NaN", "unsupported value", map[string]float64{"ms": math.NaN()}},
		{"channel", "unsupported type", map[string]any{"c": make(chan int)}},
		{"own kind", `its own "kind" key`, map[string]string{"kind": "summary", "arm": "default"}},
		{"own kind by tag", `its own "kind" key`, struct {
			Kind string `json:"kind"`
		}{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.Add("bad_"+strings.ReplaceAll(tt.name, " ", "_"), tt.v)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "bad_") {
				t.Errorf("Add(%#v) = %v, want an error naming the kind and saying %q", tt.v, err, tt.want)
			}
			after, rerr := os.ReadFile(f.Path())
			if rerr != nil || !bytes.Equal(after, before) {
				t.Errorf("after a refused record the file changed:\n%s\nwant\n%s", after, before)
			}
		})
	}
	if err := f.Add("sample", map[string]int{"run": 1}); err != nil {
		t.Fatalf("Add after refused records = %v", err)
	}
	ls := readLines(t, f.Path())
	if len(ls) != 3 || ls[2].Rest["run"] != float64(1) {
		t.Errorf("file holds %+v, want provenance and runs 0 and 1 only", ls)
	}
	if tmp := tempFiles(t, dir); len(tmp) != 0 {
		t.Errorf("temp files left: %v", tmp)
	}
}

// TestFailedRewriteKeepsRecord: when the rewrite fails (the directory is
// gone), Add says so, and the record is written by the next Add that
// succeeds, so a transient failure loses nothing.
func TestFailedRewriteKeepsRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "results")
	f, err := Create(dir, "run", testProv())
	if err != nil {
		t.Fatal(err)
	}
	moved := dir + ".away"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := f.Add("sample", map[string]int{"run": 0}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), f.Path()) {
		t.Errorf("Add with the directory gone = %v, want ErrNotExist naming %s", err, f.Path())
	}
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	if err := f.Add("sample", map[string]int{"run": 1}); err != nil {
		t.Fatal(err)
	}
	ls := readLines(t, f.Path())
	if len(ls) != 3 || ls[1].Rest["run"] != float64(0) || ls[2].Rest["run"] != float64(1) {
		t.Errorf("file holds %+v, want provenance, run 0 (the failed Add's), run 1", ls)
	}
}

// TestConcurrentAdds: records added from many goroutines each land whole,
// on their own line, none lost.
func TestConcurrentAdds(t *testing.T) {
	f, err := Create(t.TempDir(), "run", testProv())
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				errs <- f.Add("sample", map[string]any{"worker": w, "i": i, "pad": strings.Repeat("p", 100*w)})
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ls := readLines(t, f.Path())
	seen := map[string]bool{}
	for _, l := range ls[1:] {
		k := fmt.Sprint(l.Rest["worker"], "/", l.Rest["i"])
		if seen[k] {
			t.Errorf("record %s twice", k)
		}
		seen[k] = true
	}
	if len(seen) != workers*each || len(ls) != 1+workers*each {
		t.Errorf("file holds %d lines, %d distinct records; want %d", len(ls)-1, len(seen), workers*each)
	}
}

// TestSIGKILLKeepsWholeRecords kills a writer (this test binary, adding
// records as fast as it can) with SIGKILL at different moments: the
// results file it leaves always reads whole, every line one record, the
// records a gapless prefix of those added. A kill can land between the
// temp file's creation and its rename; such a temp file is left beside
// the results (nothing removes it) and is only logged here.
func TestSIGKILLKeepsWholeRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts and kills writer processes")
	}
	for round, wait := range []int{2, 10, 40} {
		t.Run(strconv.Itoa(wait)+"records", func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), writerEnv+"="+dir)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killed := false
			defer func() {
				if !killed {
					cmd.Process.Kill()
					cmd.Wait()
				}
			}()
			path, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("read the writer's path: %v (stderr %q)", err, stderr.String())
			}
			path = strings.TrimSpace(path)
			deadline := time.Now().Add(30 * time.Second)
			for {
				b, _ := os.ReadFile(path)
				if bytes.Count(b, []byte("\n")) >= wait+1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the writer added fewer than %d records in 30 s (stderr %q)", wait, stderr.String())
				}
				time.Sleep(time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killed = true
			werr := cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("writer ended with %v, want killed by SIGKILL (stderr %q)", werr, stderr.String())
			}
			ls := readLines(t, path)
			if len(ls) < wait+1 || ls[0].Kind != "provenance" {
				t.Fatalf("after SIGKILL the file holds %d lines starting %+v, want the provenance and at least %d records", len(ls), ls[:1], wait)
			}
			for i, l := range ls[1:] {
				if l.Kind != "sample" || l.Rest["i"] != float64(i) {
					t.Fatalf("after SIGKILL line %d = kind %q i %v, want sample %d (records in order, none missing)", i+2, l.Kind, l.Rest["i"], i)
				}
			}
			if tmp := tempFiles(t, dir); len(tmp) > 0 {
				t.Logf("round %d: SIGKILL left temp file(s) %v beside %d records", round, tmp, len(ls)-1)
			}
		})
	}
}
