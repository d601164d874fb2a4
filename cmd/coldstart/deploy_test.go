package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	servingclient "knative.dev/serving/pkg/client/clientset/versioned"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/internal/kubetest"
	"github.com/coldstart-go/coldstart/knative"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func parseDeploy(args ...string) (*deployOptions, error) {
	var got *deployOptions
	cmd := newDeployCmd(func(_ context.Context, o *deployOptions, _ io.Writer) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	err := cmd.Execute()
	return got, err
}

func TestDeployFlags(t *testing.T) {
	img := "r.example/echo@" + digest
	tests := []struct {
		name    string
		args    []string
		arms    []knative.Arm
		check   func(t *testing.T, o *deployOptions)
		wantErr string
	}{
		{name: "arms from images, sorted", args: []string{"--image", "upx=" + img, "--image", "default=" + img, "--budget", "cores=0.5,mem=256Mi"},
			arms: []knative.Arm{
				{Name: "default", Image: img, Budget: budget.Budget{Cores: 0.5, MemBytes: 256 << 20}},
				{Name: "upx", Image: img, Budget: budget.Budget{Cores: 0.5, MemBytes: 256 << 20}},
			},
			check: func(t *testing.T, o *deployOptions) {
				if o.Service.InitialScale != knative.AutoInitialScale || o.Timeout != 5*time.Minute {
					t.Errorf("defaults: initial scale %d, timeout %v", o.Service.InitialScale, o.Timeout)
				}
			}},
		{name: "deprecated --cpu and --memory: the same budget", args: []string{"--image", "default=" + img, "--cpu", "0.5", "--memory", "256Mi"},
			arms: []knative.Arm{{Name: "default", Image: img, Budget: budget.Budget{Cores: 0.5, MemBytes: 256 << 20}}}},
		{name: "millicores, more than this machine has", args: []string{"--image", "default=" + img, "--budget", "cores=64000m"},
			arms: []knative.Arm{{Name: "default", Image: img, Budget: budget.Budget{Cores: 64}}}},
		{name: "budget max: no requests or limits", args: []string{"--image", "default=" + img, "--budget", "max"},
			arms: []knative.Arm{{Name: "default", Image: img}}},
		{name: "budget: CPU set", args: []string{"--image", "default=" + img, "--budget", "cpus=0,cores=1"}, wantErr: `--budget: cpus= in "cpus=0,cores=1": a CPU set has no Kubernetes equivalent`},
		{name: "budget: a list", args: []string{"--image", "default=" + img, "--budget", "cores=1;max"}, wantErr: `--budget: "cores=1;max": deploy takes one budget`},
		{name: "budget: unknown key", args: []string{"--image", "default=" + img, "--budget", "gpus=1"}, wantErr: `--budget: unknown key "gpus"`},
		{name: "budget: zero cores", args: []string{"--image", "default=" + img, "--budget", "cores=0"}, wantErr: `--budget: cores=0 in "cores=0": want a CPU count of at least 1m`},
		{name: "budget: bad size", args: []string{"--image", "default=" + img, "--budget", "mem=lots"}, wantErr: `--budget: `},
		{name: "budget: key twice", args: []string{"--image", "default=" + img, "--budget", "mem=1Gi,mem=2Gi"}, wantErr: `--budget: mem given twice`},
		{name: "--budget and --cpu", args: []string{"--image", "default=" + img, "--budget", "cores=1", "--cpu", "1"}, wantErr: "[budget cpu] were all set"},
		{name: "-v and -q", args: []string{"--image", "default=" + img, "-v", "-q"}, wantErr: "[quiet verbose] were all set"},
		{name: "--arms picks", args: []string{"--image", "upx=" + img, "--image", "default=" + img, "--arms", "upx"},
			arms: []knative.Arm{{Name: "upx", Image: img}}},
		{name: "overrides", args: []string{"--image", "default=" + img, "--initial-scale", "0", "--window", "10s",
			"--target-burst-capacity", "-1", "--container-concurrency", "8", "--annotation", "autoscaling.knative.dev/max-scale=1"},
			arms: []knative.Arm{{Name: "default", Image: img}},
			check: func(t *testing.T, o *deployOptions) {
				s := o.Service
				if s.InitialScale != 0 || s.Window != 10*time.Second || s.TargetBurstCapacity != -1 || s.ContainerConcurrency != 8 ||
					s.Annotations["autoscaling.knative.dev/max-scale"] != "1" {
					t.Errorf("service options = %+v", s)
				}
			}},
		{name: "env and env-secret, in order", args: []string{"--image", "default=" + img, "--env", "LOG=debug", "--env-secret", "DB_PASSWORD=db-creds:password", "--env", "EMPTY="},
			arms: []knative.Arm{{Name: "default", Image: img}},
			check: func(t *testing.T, o *deployOptions) {
				want := []knative.EnvVar{{Name: "LOG", Value: "debug"}, {Name: "EMPTY"}, {Name: "DB_PASSWORD", Secret: "db-creds", Key: "password"}}
				if d := cmp.Diff(want, o.Service.Env); d != "" {
					t.Errorf("service env (-want +got):\n%s", d)
				}
			}},
		{name: "env without =", args: []string{"--image", "default=" + img, "--env", "LOG"}, wantErr: `--env: "LOG", want K=V`},
		{name: "env: a bad name, its value unsaid", args: []string{"--image", "default=" + img, "--env", "1X=hunter2"}, wantErr: `--env: environment variable "1X"`},
		{name: "env-secret without a key", args: []string{"--image", "default=" + img, "--env-secret", "DB=db-creds"}, wantErr: `--env-secret: "DB=db-creds", want K=SECRET:KEY`},
		{name: "env-secret: a bad secret name", args: []string{"--image", "default=" + img, "--env-secret", "DB=Creds:pw"}, wantErr: `--env-secret: environment variable DB: secret name "Creds"`},
		{name: "a variable twice", args: []string{"--image", "default=" + img, "--env", "DB=x", "--env-secret", "DB=db:pw"}, wantErr: "--env-secret: DB given twice (also by --env)"},
		{name: "delete needs no image", args: []string{"--delete", "--arms", "upx"},
			check: func(t *testing.T, o *deployOptions) {
				if !o.Delete || len(o.Arms) != 1 {
					t.Errorf("delete options = %+v", o)
				}
			}},
		{name: "no image", args: nil, wantErr: "--image: none given"},
		{name: "tag only", args: []string{"--image", "default=r.example/echo:latest"}, wantErr: "--image default: image \"r.example/echo:latest\""},
		{name: "not ARM=REF", args: []string{"--image", img}, wantErr: "want ARM=REPO@sha256:HEX"},
		{name: "arm without image", args: []string{"--image", "default=" + img, "--arms", "default,upx"}, wantErr: "--arms: arm upx has no --image"},
		{name: "bad initial scale", args: []string{"--image", "default=" + img, "--initial-scale", "some"}, wantErr: "--initial-scale"},
		{name: "window too short", args: []string{"--image", "default=" + img, "--window", "1s"}, wantErr: "--window: 1s"},
		{name: "bad memory", args: []string{"--image", "default=" + img, "--memory", "lots"}, wantErr: "--memory"},
		{name: "dry-run and delete", args: []string{"--dry-run", "--delete"}, wantErr: "dry-run"},
		{name: "dry run without an image: the image arm, to build locally", args: []string{"--dry-run"},
			arms: []knative.Arm{{Name: "image"}}},
		{name: "dry run: the local image arm beside a pushed one", args: []string{"--dry-run", "--image", "upx=" + img, "--arms", "image,upx"},
			arms: []knative.Arm{{Name: "image"}, {Name: "upx", Image: img}}},
		{name: "dry run: only the image arm builds locally", args: []string{"--dry-run", "--arms", "upx"}, wantErr: "--arms: arm upx has no --image"},
		{name: "PKG without --dry-run", args: []string{"--image", "default=" + img, "./cmd/x"}, wantErr: "PKG ./cmd/x: only with --dry-run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseDeploy(tt.args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("deploy %v = %v, want error containing %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("deploy %v: %v", tt.args, err)
			}
			if d := cmp.Diff(tt.arms, o.arms, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("arms (-want +got):\n%s", d)
			}
			if tt.check != nil {
				tt.check(t, o)
			}
		})
	}
}

func TestDeployDryRun(t *testing.T) {
	img := "r.example/echo@" + digest
	cmd := newDeployCmd(runDeploy)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--dry-run", "--namespace", "bench", "--image", "default=" + img, "--image", "upx=" + img, "--budget", "cores=500m,mem=256Mi", "--env-secret", "DB_PASSWORD=db-creds:password"})
	t.Setenv("KUBECONFIG", "/nonexistent") // --dry-run must not need a cluster
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	y := out.String()
	for _, want := range []string{"name: coldstart-default", "namespace: bench", "name: coldstart-upx", "name: h2c",
		"enableServiceLinks: false", "cpu: 500m", "memory: 256Mi", "autoscaling.knative.dev/min-scale: \"0\"", "\n---\n",
		"name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              key: password\n              name: db-creds"} {
		if !strings.Contains(y, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, y)
		}
	}
}

// TestDeployDryRunLocalImage: a dry run with no pushed image builds the
// image arm (the sample server) locally and prints its manifest by the
// digest that build has, marked as not pushed, beside a pushed arm's.
func TestDeployDryRunLocalImage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the sample server's image arm")
	}
	t.Setenv("KUBECONFIG", "/nonexistent") // --dry-run must not need a cluster
	cache := t.TempDir()
	img := "r.example/echo@" + digest
	cmd := newDeployCmd(runDeploy)
	var out, errw bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errw)
	cmd.SetArgs([]string{"--dry-run", "--cache-dir", cache, "--arms", "image,upx", "--image", "upx=" + img})
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("deploy --dry-run: %v (stderr %s)", err, errw.String())
	}
	// The same build again (its binary from the cache; the image digest is
	// reproducible): its digest is the one shown.
	src, err := builds.SampleSource()
	if err != nil {
		t.Fatal(err)
	}
	arts, errs := builds.BuildAll(context.Background(), src, []string{builds.ImageArm}, builds.Options{CacheDir: cache})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	local := arts[0].Digest
	if !strings.HasPrefix(local, "sha256:") {
		t.Fatalf("image arm built again: digest %q, want sha256:HEX", local)
	}
	docs := strings.Split(out.String(), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("dry run printed %d YAML documents, want 2:\n%s", len(docs), out.String())
	}
	imageDoc, upxDoc := docs[0], docs[1]
	for _, want := range []string{"# NOT PUSHED: arm image: not pushed: " + local, "name: coldstart-image",
		"image: " + NotPushedRepo + "image@" + local, "--image image=REPO@sha256:HEX"} {
		if !strings.Contains(imageDoc, want) {
			t.Errorf("the image arm's manifest lacks %q:\n%s", want, imageDoc)
		}
	}
	if !strings.Contains(upxDoc, "image: "+img) || strings.Contains(upxDoc, "NOT PUSHED") {
		t.Errorf("the pushed arm's manifest should show its --image and no note:\n%s", upxDoc)
	}
	if !strings.Contains(errw.String(), "arm image: not pushed: "+local) {
		t.Errorf("stderr %q does not say the image arm is not pushed", errw.String())
	}
	if _, err := knative.ParseDigest(NotPushedRepo + "image@" + local); err != nil {
		t.Errorf("the not-pushed reference does not parse as a digest reference: %v", err)
	}
}

func TestDeployNoCluster(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cmd := newDeployCmd(runDeploy)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--image", "default=r.example/echo@" + digest})
	err := cmd.ExecuteContext(context.Background())
	if !errors.Is(err, knative.ErrNoKubeconfig) {
		t.Errorf("deploy without a kubeconfig = %v, want %v", err, knative.ErrNoKubeconfig)
	}
}

// TestDeployOnAPIServer runs the command against a real kube-apiserver with
// Knative's Service CRD (binaries from scripts/kube-testenv.sh; skipped
// without them). No Knative controller runs, so nothing becomes Ready.
func TestDeployOnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd (~7 s)")
	}
	if _, err := kubetest.AssetsDir(); err != nil {
		t.Skip(err)
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "knative.dev/serving").Output()
	if err != nil {
		t.Fatalf("go list -m knative.dev/serving: %v", err)
	}
	env := kubetest.Start(t, filepath.Join(strings.TrimSpace(string(out)), "config", "core", "300-resources", "service.yaml"))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kc := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	img := "r.example/echo@" + digest
	var stderr string // the last deploy's
	deploy := func(args ...string) (string, error) {
		cmd := newDeployCmd(runDeploy)
		var buf, errw bytes.Buffer
		cmd.SetOut(&buf)
		cmd.SetErr(&errw)
		cmd.SetArgs(append([]string{"--kubeconfig", kubeconfig, "--namespace", "bench"}, args...))
		err := cmd.ExecuteContext(ctx)
		stderr = errw.String()
		return buf.String(), err
	}
	names := func() []string {
		l, err := servingclient.NewForConfigOrDie(env.Config).ServingV1().Services("bench").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, s := range l.Items {
			n = append(n, s.Name+" window="+s.Spec.Template.Annotations["autoscaling.knative.dev/window"])
		}
		return n
	}

	got, err := deploy("--wait-timeout", "0", "--image", "default="+img, "--image", "upx="+img)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "bench/coldstart-default  true") || !strings.Contains(got, "bench/coldstart-upx      true") {
		t.Errorf("first deploy printed:\n%s", got)
	}
	// Progress by default; -v adds each API request.
	if !strings.Contains(stderr, "created service bench/coldstart-default\n") || strings.Contains(stderr, "+ ") {
		t.Errorf("deploy without -v: stderr %q, want progress (created service ...) and no API requests", stderr)
	}
	// --env is in the Service as given; --env-secret is a reference to
	// the Secret's key, its value nowhere in the Service.
	if _, err := deploy("--wait-timeout", "0", "--image", "myservice="+img, "--name-prefix", "",
		"--env", "LOG=debug", "--env-secret", "DB_PASSWORD=db-creds:password"); err != nil {
		t.Fatal(err)
	}
	svc, err := servingclient.NewForConfigOrDie(env.Config).ServingV1().Services("bench").Get(ctx, "myservice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantEnv := []corev1.EnvVar{
		{Name: "LOG", Value: "debug"},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
	}
	if d := cmp.Diff(wantEnv, svc.Spec.Template.Spec.Containers[0].Env); d != "" {
		t.Errorf("myservice's container env (-want +got):\n%s", d)
	}
	if err := servingclient.NewForConfigOrDie(env.Config).ServingV1().Services("bench").Delete(ctx, "myservice", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	got, err = deploy("-v", "--wait-timeout", "0", "--window", "30s", "--image", "default="+img, "--image", "upx="+img)
	if err != nil {
		t.Fatal(err)
	}
	if want := "+ PUT " + strings.TrimSuffix(env.Config.Host, "/") + "/apis/serving.knative.dev/v1/namespaces/bench/services/coldstart-default"; !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "updated service bench/coldstart-default\n") {
		t.Errorf("deploy -v: stderr %q, want progress and %q", stderr, want)
	}
	if !strings.Contains(got, "bench/coldstart-default  false") {
		t.Errorf("second deploy printed (want updates):\n%s", got)
	}
	if d := cmp.Diff([]string{"coldstart-default window=30s", "coldstart-upx window=30s"}, names()); d != "" {
		t.Errorf("services (-want +got):\n%s", d)
	}

	// Without a Knative controller nothing gets Ready: the error says so
	// and the Service this deploy created is gone again.
	_, err = deploy("--wait-timeout", "1s", "--image", "pgo="+img)
	if !errors.Is(err, knative.ErrNotReady) || !strings.Contains(err.Error(), "is the Knative controller running?") {
		t.Errorf("deploy with no controller = %v, want %v", err, knative.ErrNotReady)
	}

	got, err = deploy("-q", "--delete")
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("deploy -q --delete: stderr %q, want nothing", stderr)
	}
	if want := "deleted bench/coldstart-default\ndeleted bench/coldstart-upx\n"; got != want {
		t.Errorf("--delete printed %q, want %q", got, want)
	}
	if n := names(); len(n) != 0 {
		t.Errorf("left after --delete: %v", n)
	}
}

// timeoutParse runs a command newCmd builds on args with a run function
// that records the options, and returns the timeout get reads from them,
// what the command printed, and its help text. (Cobra prints pflag's
// deprecation warnings to OutOrStderr: stderr, but to the test's writer
// once SetOut is called; run_errors.txtar checks stderr.)
func timeoutParse[O any](newCmd func(func(context.Context, *O, io.Writer) error) *cobra.Command, get func(*O) time.Duration, args []string) (time.Duration, string, string, error) {
	var got *O
	cmd := newCmd(func(_ context.Context, o *O, _ io.Writer) error { got = o; return nil })
	var printed bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&printed)
	cmd.SetErr(&printed)
	if err := cmd.Execute(); err != nil {
		return 0, printed.String(), "", err
	}
	return get(got), printed.String(), cmd.Flags().FlagUsages(), nil
}

// TestTimeoutFlags: each command's timeout has a name saying what it
// bounds, one name one meaning across commands (--start-timeout: one
// start, up to its first ready reply; --wait-timeout: deploy's wait for
// all Services); --timeout, their old shared name, still sets the same
// value, with a deprecation warning, and is not in the help.
func TestTimeoutFlags(t *testing.T) {
	img := "r.example/echo@" + digest
	parsers := []struct {
		cmd, flag string
		extra     []string
		parse     func(args []string) (time.Duration, string, string, error)
	}{
		{"run", "start-timeout", nil, func(a []string) (time.Duration, string, string, error) {
			return timeoutParse(newRunCmd, func(o *runOptions) time.Duration { return o.Timeout }, a)
		}},
		{"explain", "start-timeout", nil, func(a []string) (time.Duration, string, string, error) {
			return timeoutParse(newExplainCmd, func(o *explainOptions) time.Duration { return o.Timeout }, a)
		}},
		{"density", "start-timeout", nil, func(a []string) (time.Duration, string, string, error) {
			return timeoutParse(newDensityCmd, func(o *densityOptions) time.Duration { return o.Timeout }, a)
		}},
		{"pull", "start-timeout", nil, func(a []string) (time.Duration, string, string, error) {
			return timeoutParse(newPullCmd, func(o *pullOptions) time.Duration { return o.Timeout }, a)
		}},
		{"gate", "start-timeout", []string{"--base", "HEAD"}, func(a []string) (time.Duration, string, string, error) {
			return timeoutParse(newGateCmd, func(o *gateOptions) time.Duration { return o.Timeout }, a)
		}},
		{"deploy", "wait-timeout", []string{"--image", "default=" + img}, func(a []string) (time.Duration, string, string, error) {
			return timeoutParse(newDeployCmd, func(o *deployOptions) time.Duration { return o.Timeout }, a)
		}},
	}
	for _, p := range parsers {
		t.Run(p.cmd, func(t *testing.T) {
			got, printed, help, err := p.parse(append([]string{"--" + p.flag, "7s"}, p.extra...))
			if err != nil || got != 7*time.Second || printed != "" {
				t.Errorf("%s --%s 7s: timeout %v, printed %q, err %v; want 7s, no warning", p.cmd, p.flag, got, printed, err)
			}
			if !strings.Contains(help, "--"+p.flag+" ") || strings.Contains(help, "--timeout") {
				t.Errorf("%s help shows --timeout or lacks --%s:\n%s", p.cmd, p.flag, help)
			}
			got, printed, _, err = p.parse(append([]string{"--timeout", "9s"}, p.extra...))
			if want := "Flag --timeout has been deprecated, use --" + p.flag; err != nil || got != 9*time.Second || !strings.Contains(printed, want) {
				t.Errorf("%s --timeout 9s: timeout %v, printed %q, err %v; want 9s and %q", p.cmd, got, printed, err, want)
			}
		})
	}
}
