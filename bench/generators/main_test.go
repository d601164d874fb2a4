package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coldstart-go/coldstart/internal/testservers"
)

func TestMain(m *testing.M) { os.Exit(testservers.Run(m)) }

// testOptions are options for a short run: the sample server and steady
// built from this tree, h2load from $PATH (the test skips without it),
// ghz where bench/generators.sh installs it ("" when absent).
func testOptions(t *testing.T) options {
	t.Helper()
	h2load, err := exec.LookPath("h2load")
	if err != nil {
		t.Skip("h2load not installed (Debian nghttp2-client; bench/generators.sh installs it)")
	}
	gen := strconv.Itoa(runtime.NumCPU() - 1)
	o := options{
		server: testservers.BuildPackage(t, testservers.Echo), steady: testservers.BuildPackage(t, "cmd/steady"),
		h2load: h2load, proto: "../../internal/echo/echopb/echo.proto",
		serverCPU: "0", genCPU: gen, tools: "h2load,steady-lean",
		rounds: 1, warmup: 50, seqCalls: 200, parCalls: 400, par: 4, results: t.TempDir(),
	}
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		ghz := filepath.Join(strings.TrimSpace(strings.Split(string(gp), string(os.PathListSeparator))[0]), "bin", "ghz")
		if _, err := os.Stat(ghz); err == nil {
			o.ghz = ghz
		}
	}
	return o
}

// TestTLSServer: the -tls server serves TLS 1.3 with ALPN h2 and a
// certificate that verifies against the run's CA only; h2load (over
// https://, ALPN h2) and steady's lean and grpc-go clients (verifying
// against that CA) each make every call there without error, as does ghz
// where it is installed.
func TestTLSServer(t *testing.T) {
	o := testOptions(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := startServer(ctx, o, true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()

	pem, err := os.ReadFile(s.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", s.caFile)
	}
	c, err := tls.Dial("tcp", s.target.Address, &tls.Config{RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("TLS handshake with the run's CA: %v", err)
	}
	st := c.ConnectionState()
	c.Close()
	if st.Version != tls.VersionTLS13 || st.NegotiatedProtocol != "h2" {
		t.Errorf("TLS version %#x, ALPN %q; want TLS 1.3 and h2", st.Version, st.NegotiatedProtocol)
	}
	if _, err := tls.Dial("tcp", s.target.Address, &tls.Config{RootCAs: x509.NewCertPool()}); !errors.As(err, new(x509.UnknownAuthorityError)) {
		t.Errorf("TLS handshake trusting no CA: %v, want an unknown authority", err)
	}

	check := func(name string, r Row, err error, n int) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s over TLS: %v", name, err)
		}
		if r.Calls != int64(n) || r.Errors != 0 || r.CallsPerS <= 0 {
			t.Errorf("%s over TLS: %d calls (%d errors) at %.0f/s, want %d without error", name, r.Calls, r.Errors, r.CallsPerS, n)
		}
	}
	r, err := runH2load(ctx, o, s, 4, 200)
	check("h2load", r, err, 200)
	for _, client := range []string{"lean", "grpc"} {
		r, err := runSteady(ctx, o, s, client, 1, 200)
		check("steady "+client, r, err, 200)
	}
	if o.ghz == "" {
		t.Log("ghz not installed: its TLS run is not tested")
		return
	}
	r, err = runGhz(ctx, o, s, 4, 200)
	check("ghz", r, err, 200)
}

// TestRunTLS runs -tls end to end: rows over both transports for every
// tool, summaries compared with h2load over the same transport, the
// certificates' fingerprints in the provenance, and no key in the results.
func TestRunTLS(t *testing.T) {
	o := testOptions(t)
	o.tls = true
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(o.results, "*_generators.jsonl"))
	if len(files) != 1 {
		t.Fatalf("results %v, want one *_generators.jsonl", files)
	}
	f, err := os.Open(files[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type key struct {
		tool string
		c    int
		tls  bool
	}
	rows, sums := map[key]int{}, map[key]Summary{}
	var notes map[string]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "PRIVATE KEY") {
			t.Errorf("a key in the results: %s", sc.Text())
		}
		var rec struct {
			Kind  string            `json:"kind"`
			Notes map[string]string `json:"notes"`
			Summary
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		k := key{rec.Tool, rec.Concurrency, rec.TLS}
		switch rec.Kind {
		case "provenance":
			notes = rec.Notes
		case "row":
			rows[k]++
		case "summary":
			sums[k] = rec.Summary
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"h2load", "steady-lean"} {
		for _, c := range []int{1, o.par} {
			for _, tl := range []bool{false, true} {
				k := key{tool, c, tl}
				if rows[k] != 1 {
					t.Errorf("%v: %d rows, want 1", k, rows[k])
				}
				sm, ok := sums[k]
				if !ok || sm.ErrorsAllRounds != 0 || sm.ClientCPU <= 0 {
					t.Errorf("%v: summary %+v, want one without errors", k, sm)
				}
				if tool == "h2load" && sm.CPUOverH2load != 1 {
					t.Errorf("%v: h2load's CPU over h2load's is %v, want 1 (compared within its transport)", k, sm.CPUOverH2load)
				}
			}
		}
	}
	hex64 := regexp.MustCompile(`^[0-9a-f]{64}$`)
	for _, n := range []string{"tls_ca_sha256", "tls_server_cert_sha256"} {
		if !hex64.MatchString(notes[n]) {
			t.Errorf("provenance note %s = %q, want a SHA-256 fingerprint", n, notes[n])
		}
	}
	if !strings.Contains(notes["tls"], "verifies no certificate") {
		t.Errorf("provenance note tls = %q, want it to say h2load verifies no certificate", notes["tls"])
	}
	md, err := os.ReadFile(strings.TrimSuffix(files[0], ".jsonl") + ".md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| tls |") || strings.Contains(string(md), "PRIVATE KEY") {
		t.Errorf("the Markdown results lack a tls column or hold a key:\n%s", md)
	}
}
