package report

import (
	"bytes"
	"strings"
	"testing"
)

// Two real campaigns (the sample server's default, static, prebound and
// snapshot arms; the JVM server default vs snapshot) give the "Start
// without starting" section, with the checkpoint read from its record.
func TestStartArms(t *testing.T) {
	r := load(t, "testdata/startarms")
	if len(r.Warnings) != 0 {
		t.Errorf("warnings: %v", r.Warnings)
	}
	if n := len(r.Campaigns[0].Checkpoints); n != 1 {
		t.Fatalf("checkpoints read = %d, want 1", n)
	}
	var b bytes.Buffer
	m := &mdw{w: &b}
	r.startArmsSection(m)
	if m.err != nil {
		t.Fatal(m.err)
	}
	for _, want := range []string{"| prebound | max | 5 | 8.11 |", "| 68% |", "| snapshot | max | 3 | 523 |", "Checkpoint of default: 31.4 MiB"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("section lacks %q", want)
		}
	}
	golden(t, b.Bytes())
}

// Campaigns without start arms get no such section.
func TestStartArmsAbsent(t *testing.T) {
	r := load(t, "testdata")
	var b bytes.Buffer
	r.startArmsSection(&mdw{w: &b})
	if b.Len() != 0 {
		t.Errorf("section without start arms:\n%s", b.String())
	}
}
