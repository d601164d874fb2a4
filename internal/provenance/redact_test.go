package provenance

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedactArgs(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"env, both forms",
			[]string{"coldstart", "run", "--env", "API_TOKEN=s3cret", "--env=DB=postgres://u:pw@h/db", "./cmd/x"},
			[]string{"coldstart", "run", "--env", "API_TOKEN=<redacted>", "--env=DB=<redacted>", "./cmd/x"}},
		{"env value that looks like a flag",
			[]string{"run", "--env", "-X=1"},
			[]string{"run", "--env", "-X=<redacted>"}},
		{"gRPC metadata, every form: keys kept",
			[]string{"steady", "run", "--metadata", "authorization=Bearer s3cret", "-m", "x-api=k1", "-mx-b=k2", "-m=x-c=k3",
				"--metadata=x-d=k4", "--probe-metadata", "authorization=Bearer p1", "--probe-metadata=x-e=k5"},
			[]string{"steady", "run", "--metadata", "authorization=<redacted>", "-m", "x-api=<redacted>", "-mx-b=<redacted>", "-m=x-c=<redacted>",
				"--metadata=x-d=<redacted>", "--probe-metadata", "authorization=<redacted>", "--probe-metadata=x-e=<redacted>"}},
		{"a server's own -m flags are its own",
			[]string{"run", "./x", "--", "-mode=grpc", "-m", "3"},
			[]string{"run", "./x", "--", "-mode=grpc", "-m", "3"}},
		{"probe request kept unless marked secret",
			[]string{"run", "--probe", "/a.B/C", "--probe-request", `{"id":"1"}`},
			[]string{"run", "--probe", "/a.B/C", "--probe-request", `{"id":"1"}`}},
		{"probe request marked secret",
			[]string{"run", "--probe-request", `{"token":"abc"}`, "--secret-request"},
			[]string{"run", "--probe-request", "<redacted>", "--secret-request"}},
		{"probe request marked secret, inline",
			[]string{"run", `--probe-request={"token":"abc"}`, "--secret-request=true"},
			[]string{"run", "--probe-request=<redacted>", "--secret-request=true"}},
		{"server arguments named as secrets",
			[]string{"run", "./x", "--", "--api-key=k1", "--db-password", "p1", "--token", "--verbose", "--listen={addr}"},
			[]string{"run", "./x", "--", "--api-key=<redacted>", "--db-password", "<redacted>", "--token", "--verbose", "--listen={addr}"}},
		{"password in a URL",
			[]string{"build", "--push", "https://bob:hunter2@127.0.0.1:5000/repo", "--image", "app=127.0.0.1:5000/app@sha256:ab"},
			[]string{"build", "--push", "https://bob:<redacted>@127.0.0.1:5000/repo", "--image", "app=127.0.0.1:5000/app@sha256:ab"}},
		{"already redacted stays as it is",
			[]string{"run", "--env", "K=<redacted:hmac-0123456789ab>", "--hash-secrets"},
			[]string{"run", "--env", "K=<redacted:hmac-0123456789ab>", "--hash-secrets"}},
		{"flags after -- do not switch on hashing",
			[]string{"run", "--env", "K=v", "--", "--hash-secrets"},
			[]string{"run", "--env", "K=<redacted>", "--", "--hash-secrets"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, RedactArgs(tt.args)); diff != "" {
				t.Errorf("RedactArgs(%q) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestRedactHash tells two secrets apart, and the same secret twice alike,
// without writing either.
func TestRedactHash(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	a := RedactArgs([]string{"run", "--hash-secrets", "--env", "K=first-secret"})
	b := RedactArgs([]string{"run", "--hash-secrets", "--env", "K=second-secret"})
	c := RedactArgs([]string{"run", "--hash-secrets", "--env=K=first-secret"})
	if !strings.HasPrefix(a[3], "K=<redacted:hmac-") || a[3] == b[3] || "--env="+a[3] != c[2] {
		t.Errorf("hashed: %q, %q, %q; want K=<redacted:hmac-…>, equal for equal values only", a[3], b[3], c[2])
	}
	for _, s := range append(append(a, b...), c...) {
		if strings.Contains(s, "secret") && !strings.HasPrefix(s, "--hash") {
			t.Errorf("%q keeps the secret", s)
		}
	}
}

func TestCollectRedacts(t *testing.T) {
	p := Collect("coldstart", []string{"coldstart", "run", "--env", "SECRET=value-123"})
	if strings.Contains(strings.Join(p.Args, " "), "value-123") {
		t.Errorf("Collect kept the secret: %q", p.Args)
	}
}
