package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coldstart-go/coldstart/internal/testservers/testcerts"
	"github.com/coldstart-go/coldstart/knative"
)

// TestKnativeResultsTLS: run --on knative over TLS records, after the
// provenance (with a note on where the handshake is), how the probes spoke
// TLS: the CA file's path and fingerprint, the key's path only.
func TestKnativeResultsTLS(t *testing.T) {
	certs := t.TempDir()
	if err := testcerts.WriteSet(certs); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	o := parseFlags(t, "run", newRunCmd, []string{"--on", "knative", "--arms", "image", "--target", "203.0.113.7:443", "--tls",
		"--cacert", filepath.Join(certs, "ca.crt"), "--cert", filepath.Join(certs, "client.crt"), "--key", filepath.Join(certs, "client.key"),
		"--results-dir", dir}, "")
	checker, err := o.checker()
	if err != nil {
		t.Fatal(err)
	}
	if checker.Name() != "grpcs-health" {
		t.Errorf("probe %q, want grpcs-health", checker.Name())
	}
	rf, err := o.createKnativeResults(knative.ColdStart{Checker: checker}, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(rf.Path())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"probe_tls":"each probe a new TLS client`) {
		t.Fatalf("results file:\n%s\nwant the provenance with a probe_tls note, then tls_client", b)
	}
	for _, want := range []string{`{"kind":"tls_client","cacert":"` + filepath.Join(certs, "ca.crt") + `","cacert_sha256":["`,
		`"cert":"` + filepath.Join(certs, "client.crt") + `"`, `"key":"` + filepath.Join(certs, "client.key") + `"`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("tls_client record %s lacks %s", lines[1], want)
		}
	}
	if strings.Contains(string(b), "PRIVATE KEY") {
		t.Error("a key's contents are in the results file")
	}

	// In plaintext: no note, no record.
	o = parseFlags(t, "run", newRunCmd, []string{"--on", "knative", "--arms", "image", "--results-dir", t.TempDir()}, "")
	if o.AutoRuns || o.Runs != fixedRuns {
		t.Errorf("--on knative without --runs: runs %d, auto %v; want %d, false", o.Runs, o.AutoRuns, fixedRuns)
	}
	checker, err = o.checker()
	if err != nil {
		t.Fatal(err)
	}
	if rf, err = o.createKnativeResults(knative.ColdStart{Checker: checker}, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(rf.Path()); err != nil || strings.Contains(string(b), "tls_client") || strings.Contains(string(b), "probe_tls") {
		t.Errorf("plaintext results file (%v):\n%s\nwant nothing of TLS", err, b)
	}
}
