package knative

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"knative.dev/pkg/apis"
	"knative.dev/serving/pkg/apis/autoscaling"
	"knative.dev/serving/pkg/apis/config"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	autoscalerconfig "knative.dev/serving/pkg/autoscaler/config"

	"github.com/coldstart-go/coldstart/prober"
)

// TestLeverServices: each lever's variant is the arm's Service under
// ARM-LEVER with that one field changed, labelled with its arm and lever,
// and Knative's own defaulting and validation (its webhook's) take it:
// runtimeClassName only where the cluster's feature flag allows it.
func TestLeverServices(t *testing.T) {
	arm := testArms()[1] // default
	base, err := NewService(arm, DefaultServiceOptions())
	if err != nil {
		t.Fatal(err)
	}
	spec := func(s *servingv1.Service) *corev1.PodSpec { return &s.Spec.Template.Spec.PodSpec }
	tests := []struct {
		lever, name string
		check       func(*servingv1.Service) bool
	}{
		{"control", "coldstart-default-control", func(s *servingv1.Service) bool {
			// Everything but the names and labels is the arm's.
			return s.Spec.Template.Spec.PodSpec.String() == base.Spec.Template.Spec.PodSpec.String() &&
				s.Spec.Template.Annotations[autoscaling.TargetBurstCapacityKey] == "0"
		}},
		{"service-links", "coldstart-default-service-links", func(s *servingv1.Service) bool {
			return *spec(s).EnableServiceLinks
		}},
		{"no-token", "coldstart-default-no-token", func(s *servingv1.Service) bool {
			return spec(s).AutomountServiceAccountToken != nil && !*spec(s).AutomountServiceAccountToken
		}},
		{"tcp-readiness", "coldstart-default-tcp-readiness", func(s *servingv1.Service) bool {
			p := spec(s).Containers[0].ReadinessProbe
			return p.TCPSocket != nil && p.GRPC == nil && p.TCPSocket.Port.IntValue() == 8080
		}},
		{"readiness-period=2", "coldstart-default-readiness-period-2", func(s *servingv1.Service) bool {
			p := spec(s).Containers[0].ReadinessProbe
			return p.PeriodSeconds == 2 && p.GRPC != nil
		}},
		{"activator-always", "coldstart-default-activator-always", func(s *servingv1.Service) bool {
			return s.Spec.Template.Annotations[autoscaling.TargetBurstCapacityKey] == "-1"
		}},
		{"runtime=crun", "coldstart-default-runtime-crun", func(s *servingv1.Service) bool {
			return spec(s).RuntimeClassName != nil && *spec(s).RuntimeClassName == "crun"
		}},
		// A bandwidth's capitals and dots cannot be in a name.
		{"pull=2.5Gbit", "coldstart-default-pull-2-5gbit", func(s *servingv1.Service) bool {
			return s.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey] == "0" &&
				spec(s).Containers[0].Image == base.Spec.Template.Spec.Containers[0].Image
		}},
		{"pull=cached", "coldstart-default-pull-cached", func(s *servingv1.Service) bool {
			return s.Spec.Template.Annotations[autoscaling.InitialScaleAnnotationKey] == "0"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.lever, func(t *testing.T) {
			l, err := ParseLever(tt.lever)
			if err != nil {
				t.Fatal(err)
			}
			a := arm
			a.Lever = &l
			s, err := NewService(a, DefaultServiceOptions())
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != tt.name || s.Labels[LabelArm] != "default" || s.Labels[LabelLever] != l.Slug() || s.Spec.Template.Labels[LabelLever] != l.Slug() {
				t.Errorf("service %s, labels %v, template labels %v; want %s, arm default, lever %s", s.Name, s.Labels, s.Spec.Template.Labels, tt.name, l.Slug())
			}
			if !tt.check(s) {
				t.Errorf("lever %s not set: pod spec %v, annotations %v", tt.lever, spec(s), s.Spec.Template.Annotations)
			}
			if l.Sets == "" {
				t.Error("Sets is empty")
			}
			for _, enabled := range []bool{false, true} {
				features := map[string]string{}
				if enabled {
					features["kubernetes.podspec-runtimeclassname"] = "enabled"
				}
				fc, err := config.NewFeaturesConfigFromMap(features)
				if err != nil {
					t.Fatal(err)
				}
				ac, _ := autoscalerconfig.NewConfigFromMap(nil)
				ac.AllowZeroInitialScale = true
				ctx := apis.WithinCreate(config.ToContext(context.Background(), &config.Config{Autoscaler: ac, Features: fc}))
				s := s.DeepCopy()
				s.SetDefaults(ctx)
				fe := s.Validate(ctx).Filter(apis.ErrorLevel)
				wantOK := enabled || !strings.HasPrefix(tt.lever, "runtime=")
				if (fe == nil) != wantOK {
					t.Errorf("runtimeclassname feature enabled=%v: Knative's Validate = %v, want ok=%v", enabled, fe, wantOK)
				}
			}
		})
	}
}

func TestParseLeverBadInput(t *testing.T) {
	for in, want := range map[string]string{
		"nope":                  `lever "nope": unknown, want one of control, service-links`,
		"no-token=1":            `lever "no-token=1": no-token takes no value`,
		"runtime":               `lever "runtime": want runtime=CLASS`,
		"runtime=":              `lever "runtime=": want runtime=CLASS`,
		"runtime=Crun_1":        `lever "runtime=Crun_1": RuntimeClass name "Crun_1": a lowercase RFC 1123 subdomain`,
		"readiness-period=0":    `lever "readiness-period=0": want a whole number of seconds, at least 1`,
		"readiness-period=1.5s": `lever "readiness-period=1.5s": want a whole number of seconds`,
		"pull":                  `lever "pull": want pull=BANDWIDTH|cached`,
		"pull=fast":             `lever "pull=fast": want cached or a bandwidth: bandwidth "fast": want a number and a unit`,
		"pull=0Mbit":            `lever "pull=0Mbit": want cached or a bandwidth: bandwidth "0Mbit": must be more than 0`,
	} {
		if _, err := ParseLever(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseLever(%q) = %v, want %q", in, err, want)
		}
	}
	if _, err := ParseLevers([]string{"no-token", "no-token"}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("a lever twice: %v", err)
	}
	if _, err := ParseLevers([]string{"runtime=crun", "runtime=crun"}); err == nil {
		t.Error("runtime=crun twice: nil error")
	}
	if ls, err := ParseLevers([]string{"runtime=crun", "runtime=runsc"}); err != nil || len(ls) != 2 {
		t.Errorf("two runtimes: %v, %v", ls, err)
	}
}

// TestDeployLevers: deploy makes each arm and its variants; deleting an
// arm deletes its variants with it.
func TestDeployLevers(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(t, "bench", true)
	fakeController(c, always(true))
	levers, err := ParseLevers([]string{"no-token", "control"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Deploy(ctx, c, WithLevers(testArms(), levers), testDeployOptions("bench"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, d := range got {
		rows = append(rows, d.Arm+"/"+d.Lever+"="+d.Service)
	}
	want := "default/=coldstart-default default/control=coldstart-default-control default/no-token=coldstart-default-no-token " +
		"upx/=coldstart-upx upx/control=coldstart-upx-control upx/no-token=coldstart-upx-no-token"
	if strings.Join(rows, " ") != want {
		t.Errorf("deployed %v\nwant %s", rows, want)
	}
	deleted, err := Delete(ctx, c, "bench", []string{"upx"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deleted, " ") != "coldstart-upx coldstart-upx-control coldstart-upx-no-token" {
		t.Errorf("delete upx: %v", deleted)
	}
}

// TestDeployRuntimeLever: a runtime lever is refused, before anything is
// made, on a cluster without that RuntimeClass or without Knative's
// runtimeClassName feature, naming what to do; allowed with both.
func TestDeployRuntimeLever(t *testing.T) {
	ctx := context.Background()
	l, err := ParseLever("runtime=crun")
	if err != nil {
		t.Fatal(err)
	}
	arms := WithLevers(testArms()[1:], []Lever{l})
	features := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config-features", Namespace: KnativeNamespace},
			Data: map[string]string{"kubernetes.podspec-runtimeclassname": v}}
	}
	crun := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "crun"}, Handler: "crun"}
	for _, tt := range []struct {
		name string
		objs []runtime.Object
		want string
	}{
		{"no RuntimeClass", []runtime.Object{features("enabled")}, "lever runtime=crun: the cluster has no RuntimeClass crun: create one"},
		{"feature off", []runtime.Object{crun, features("disabled")}, `Knative refuses runtimeClassName while kubernetes.podspec-runtimeclassname is "disabled" in knative-serving/config-features; set it to enabled`},
		{"allowed", []runtime.Object{crun, features("enabled")}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeCluster(t, "bench", true)
			fakeController(c, always(true))
			for _, o := range tt.objs {
				if err := c.Kube.(*dynamicfake.FakeDynamicClient).Tracker().Add(unstructuredOf(o)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := Deploy(ctx, c, arms, testDeployOptions("bench"))
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Deploy = %v, want %q", err, tt.want)
			}
			if n := serviceNames(t, c, "bench"); len(n) != 0 {
				t.Errorf("refused deploy left services %v", n)
			}
		})
	}
}

// TestColdStartLeverNotDeployed: measuring a lever whose Service deploy
// did not make, or made for another lever, is refused before any probe,
// saying how to deploy it.
func TestColdStartLeverNotDeployed(t *testing.T) {
	l, err := ParseLever("no-token")
	if err != nil {
		t.Fatal(err)
	}
	impostor := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Name: "coldstart-static-no-token", Namespace: "bench",
		Labels: map[string]string{LabelManagedBy: ManagedBy, LabelArm: "static"}}}
	for _, tt := range []struct {
		svcs []*servingv1.Service
		want string
	}{
		{nil, "lever no-token of arm static: no service bench/coldstart-static-no-token: deploy it with coldstart deploy --arms static --lever no-token"},
		{[]*servingv1.Service{impostor}, `service bench/coldstart-static-no-token is labelled arm "static", lever "", not "static", "no-token"`},
	} {
		c := fakeCluster(t, "bench", true, tt.svcs...)
		cs := ColdStart{Clients: c, Namespace: "bench", Arms: []string{"static"}, NamePrefix: "coldstart-", Runs: 1, Levers: []Lever{l}}
		_, err := cs.Run(context.Background(), func(s prober.Sample) error { t.Error("a sample was recorded"); return nil })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run = %v, want %q", err, tt.want)
		}
	}
}
