package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/coldstart-go/coldstart/budget"
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
		{name: "arms from images, sorted", args: []string{"--image", "upx=" + img, "--image", "default=" + img, "--cpu", "0.5", "--memory", "256Mi"},
			arms: []knative.Arm{
				{Name: "default", Image: img, Budget: budget.Budget{Cores: 0.5, MemBytes: 256 << 20}},
				{Name: "upx", Image: img, Budget: budget.Budget{Cores: 0.5, MemBytes: 256 << 20}},
			},
			check: func(t *testing.T, o *deployOptions) {
				if o.Service.InitialScale != knative.AutoInitialScale || o.Timeout != 5*time.Minute {
					t.Errorf("defaults: initial scale %d, timeout %v", o.Service.InitialScale, o.Timeout)
				}
			}},
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
	cmd.SetArgs([]string{"--dry-run", "--namespace", "bench", "--image", "default=" + img, "--image", "upx=" + img, "--cpu", "1"})
	t.Setenv("KUBECONFIG", "/nonexistent") // --dry-run must not need a cluster
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	y := out.String()
	for _, want := range []string{"name: coldstart-default", "namespace: bench", "name: coldstart-upx", "name: h2c",
		"enableServiceLinks: false", "cpu: \"1\"", "autoscaling.knative.dev/min-scale: \"0\"", "\n---\n"} {
		if !strings.Contains(y, want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, y)
		}
	}
}

func TestDeployNoCluster(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cmd := newDeployCmd(runDeploy)
	cmd.SetOut(io.Discard)
	cmd.SetArgs([]string{"--image", "default=r.example/echo@" + digest})
	err := cmd.ExecuteContext(context.Background())
	if !errors.Is(err, knative.ErrNoKubeconfig) {
		t.Errorf("deploy without a kubeconfig = %v, want %v", err, knative.ErrNoKubeconfig)
	}
}
