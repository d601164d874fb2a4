package knative

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"knative.dev/pkg/apis"
	"knative.dev/serving/pkg/apis/autoscaling"
	"knative.dev/serving/pkg/apis/config"
	autoscalerconfig "knative.dev/serving/pkg/autoscaler/config"

	"github.com/coldstart-go/coldstart/budget"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func golden(t *testing.T, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, d)
	}
}

func testArms() []Arm {
	return []Arm{
		{Name: "upx", Image: "registry.example/echo:upx@" + testDigest,
			Budget: budget.Budget{Cores: 0.25, MemBytes: 128 << 20}},
		{Name: "default", Image: "registry.example/echo@" + testDigest},
	}
}

func TestServicesYAML(t *testing.T) {
	svcs, err := Services(testArms(), DefaultServiceOptions())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteYAML(&buf, svcs); err != nil {
		t.Fatal(err)
	}
	golden(t, buf.Bytes())
}

func TestNewServiceFields(t *testing.T) {
	o := DefaultServiceOptions()
	o.Namespace = "bench"
	o.InitialScale = 0
	o.ContainerConcurrency = 4
	o.Window = 10 * time.Second
	o.Annotations = map[string]string{autoscaling.MaxScaleAnnotationKey: "1", autoscaling.MinScaleAnnotationKey: "0"}
	s, err := NewService(Arm{Name: "pgo", Image: "r.example/x@" + testDigest, Budget: budget.Budget{Cores: 1.5, MemBytes: 1 << 30}}, o)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "coldstart-pgo" || s.Namespace != "bench" {
		t.Errorf("name = %s/%s, want bench/coldstart-pgo", s.Namespace, s.Name)
	}
	wantAnn := map[string]string{
		autoscaling.MinScaleAnnotationKey:            "0",
		autoscaling.MaxScaleAnnotationKey:            "1",
		autoscaling.InitialScaleAnnotationKey:        "0",
		autoscaling.WindowAnnotationKey:              "10s",
		autoscaling.ScaleToZeroPodRetentionPeriodKey: "0s",
		autoscaling.TargetBurstCapacityKey:           "0",
	}
	if d := cmp.Diff(wantAnn, s.Spec.Template.Annotations); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	c := s.Spec.Template.Spec.Containers[0]
	want := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	for _, rl := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
		for k, q := range want {
			if got := rl[k]; got.Cmp(q) != 0 {
				t.Errorf("%s = %s, want %s", k, got.String(), q.String())
			}
		}
	}
	if c.Ports[0].Name != "h2c" || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("port = %+v, want h2c 8080", c.Ports[0])
	}
	if got := *s.Spec.Template.Spec.ContainerConcurrency; got != 4 {
		t.Errorf("containerConcurrency = %d, want 4", got)
	}
	if e := s.Spec.Template.Spec.EnableServiceLinks; e == nil || *e {
		t.Errorf("enableServiceLinks = %v, want false", e)
	}
	if s.Labels[LabelManagedBy] != ManagedBy || s.Labels[LabelArm] != "pgo" {
		t.Errorf("labels = %v", s.Labels)
	}
}

func TestNewServiceBadInput(t *testing.T) {
	tests := []struct {
		name, image, arm string
		port             int32
		want             error
		msg              string
	}{
		{"tag only", "registry.example/echo:latest", "default", 8080, ErrNoDigest, `image "registry.example/echo:latest"`},
		{"no tag no digest", "echo", "default", 8080, ErrNoDigest, "REPO@sha256:HEX"},
		{"short digest", "echo@sha256:abc", "default", 8080, ErrNoDigest, "echo@sha256:abc"},
		{"bad arm name", "echo@" + testDigest, "Bad_Arm", 8080, nil, `service name "coldstart-Bad_Arm"`},
		{"bad port", "echo@" + testDigest, "default", 0, nil, "port 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultServiceOptions()
			o.Port = tt.port
			_, err := NewService(Arm{Name: tt.arm, Image: tt.image}, o)
			if err == nil {
				t.Fatalf("NewService(%q) = nil error", tt.image)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("NewService(%q) = %v, want %v", tt.image, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) || !strings.Contains(err.Error(), "arm "+tt.arm) {
				t.Errorf("NewService(%q) = %q, want it to name arm %s and %q", tt.image, err, tt.arm, tt.msg)
			}
		})
	}
	if _, err := Services([]Arm{{Name: "a", Image: "x@" + testDigest}, {Name: "a", Image: "x@" + testDigest}}, DefaultServiceOptions()); err == nil {
		t.Error("Services with an arm twice: nil error")
	}
}

// TestKnativeValidation runs Knative's own defaulting and validation (what
// its admission webhook does) on the Services coldstart builds.
func TestKnativeValidation(t *testing.T) {
	for _, zeroAllowed := range []bool{false, true} {
		for _, initial := range []int{0, 1} {
			o := DefaultServiceOptions()
			o.InitialScale = initial
			s, err := NewService(testArms()[0], o)
			if err != nil {
				t.Fatal(err)
			}
			ac, _ := autoscalerconfig.NewConfigFromMap(nil)
			ac.AllowZeroInitialScale = zeroAllowed
			cfg := &config.Config{Autoscaler: ac}
			ctx := config.ToContext(context.Background(), cfg)
			ctx = apis.WithinCreate(ctx)
			s.SetDefaults(ctx)
			// Warnings (the default securityContext) do not stop a create.
			fe := s.Validate(ctx).Filter(apis.ErrorLevel)
			wantOK := initial == 1 || zeroAllowed
			if (fe == nil) != wantOK {
				t.Errorf("initial-scale %d, allow-zero-initial-scale %v: Validate = %v, want ok=%v", initial, zeroAllowed, fe, wantOK)
			}
		}
	}
}

// TestNewServiceEnv: plain variables are in the manifest as given; a
// secret's is a reference to its key, with no value, and Knative's own
// validation takes both.
func TestNewServiceEnv(t *testing.T) {
	o := DefaultServiceOptions()
	o.Env = []EnvVar{{Name: "LOG_LEVEL", Value: "debug"}, {Name: "DB_PASSWORD", Secret: "db-creds", Key: "password"}, {Name: "EMPTY"}}
	s, err := NewService(testArms()[0], o)
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.EnvVar{
		{Name: "LOG_LEVEL", Value: "debug"},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
		{Name: "EMPTY"},
	}
	if d := cmp.Diff(want, s.Spec.Template.Spec.Containers[0].Env); d != "" {
		t.Errorf("container env (-want +got):\n%s", d)
	}
	ctx := apis.WithinCreate(context.Background())
	s.SetDefaults(ctx)
	if fe := s.Validate(ctx).Filter(apis.ErrorLevel); fe != nil {
		t.Errorf("Knative's validation of a Service with env: %v", fe)
	}

	for _, tt := range []struct {
		env EnvVar
		msg string
	}{
		{EnvVar{Name: "1X", Value: "v"}, `environment variable "1X"`},
		{EnvVar{Name: "X", Secret: "Bad_Secret", Key: "k"}, `secret name "Bad_Secret"`},
		{EnvVar{Name: "X", Secret: "s", Key: "a/b"}, `key "a/b" of secret s`},
	} {
		o.Env = []EnvVar{tt.env}
		if _, err := NewService(testArms()[0], o); err == nil || !strings.Contains(err.Error(), tt.msg) || strings.Contains(err.Error(), "--") {
			t.Errorf("NewService with env %+v = %v, want an error naming %s and no flag", tt.env, err, tt.msg)
		}
	}
}
