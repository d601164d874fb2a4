package builds

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dockerfileStage is what the checks need from one Dockerfile stage.
type dockerfileStage struct {
	From       string
	Entrypoint []string
	User       string
	Env        []string
	Expose     []string
	Run        []string
	Copy       []string
}

// parseDockerfile reads the instructions of each stage (comments dropped,
// continuation lines joined). It is just enough for this repository's
// Dockerfile: exec-form ENTRYPOINT, KEY=VALUE ENV.
func parseDockerfile(t *testing.T, path string) []dockerfileStage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []dockerfileStage
	var lines []string
	sc := bufio.NewScanner(f)
	cont := ""
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "#") || l == "" {
			continue
		}
		if strings.HasSuffix(l, `\`) {
			cont += strings.TrimSuffix(l, `\`) + " "
			continue
		}
		lines = append(lines, cont+l)
		cont = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		instr, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimSpace(rest)
		if strings.ToUpper(instr) == "FROM" {
			stages = append(stages, dockerfileStage{From: rest})
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("%s: %q before FROM", path, l)
		}
		s := &stages[len(stages)-1]
		switch strings.ToUpper(instr) {
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(rest), &s.Entrypoint); err != nil {
				t.Fatalf("%s: ENTRYPOINT %s: want the exec (JSON) form: %v", path, rest, err)
			}
		case "USER":
			s.User = rest
		case "ENV":
			s.Env = append(s.Env, strings.Fields(rest)...)
		case "EXPOSE":
			s.Expose = append(s.Expose, strings.Fields(rest)...)
		case "RUN":
			s.Run = append(s.Run, rest)
		case "COPY":
			s.Copy = append(s.Copy, rest)
		}
	}
	return stages
}

// TestDockerfileMatchesImageArm keeps the top-level Dockerfile and the
// daemonless image builder from drifting apart.
func TestDockerfileMatchesImageArm(t *testing.T) {
	stages := parseDockerfile(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a builder and a final stage", len(stages))
	}
	final := stages[len(stages)-1]
	if final.From != "scratch" && !strings.HasPrefix(final.From, "gcr.io/distroless/static") {
		t.Errorf("final stage FROM %s, want scratch or gcr.io/distroless/static", final.From)
	}
	type config struct {
		Entrypoint []string
		User       string
		Env        []string
		Expose     []string
	}
	want := config{
		Entrypoint: []string{ImageEntrypoint},
		User:       ImageUser,
		Env:        []string{"PORT=" + ImagePort},
		Expose:     []string{ImagePort + "/tcp"},
	}
	got := config{final.Entrypoint, final.User, final.Env, final.Expose}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Dockerfile final stage vs builds image constants (-want +got):\n%s", diff)
	}
	copied := false
	for _, c := range final.Copy {
		if strings.HasSuffix(c, " "+ImageEntrypoint) && strings.Contains(c, "--chmod=0755") {
			copied = true
		}
	}
	if !copied {
		t.Errorf("final stage COPY %q: want the binary copied to %s with --chmod=0755", final.Copy, ImageEntrypoint)
	}

	// The builder stage builds the sample server with the static arm's
	// flags.
	builder := stages[0]
	if !strings.HasPrefix(builder.From, "golang:1.26") {
		t.Errorf("builder stage FROM %s, want golang:1.26", builder.From)
	}
	var build string
	for _, r := range builder.Run {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	for _, flag := range []string{"CGO_ENABLED=0", "-trimpath", "-ldflags='-s -w'", "./examples/echo"} {
		if !strings.Contains(build, flag) {
			t.Errorf("builder RUN %q lacks %s", build, flag)
		}
	}
}
