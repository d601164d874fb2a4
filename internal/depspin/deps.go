//go:build depspin

// Package depspin keeps planned dependencies in go.mod while the packages that use them are written.
package depspin

import (
	_ "github.com/HdrHistogram/hdrhistogram-go"
	_ "github.com/containerd/cgroups/v3"
	_ "github.com/containerd/cgroups/v3/cgroup1"
	_ "github.com/containerd/cgroups/v3/cgroup2"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/go-containerregistry/pkg/v1/empty"
	_ "github.com/google/go-containerregistry/pkg/v1/layout"
	_ "github.com/google/go-containerregistry/pkg/v1/mutate"
	_ "github.com/google/go-containerregistry/pkg/v1/remote"
	_ "github.com/google/go-containerregistry/pkg/v1/tarball"
	_ "github.com/opencontainers/runtime-spec/specs-go"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "golang.org/x/perf/benchfmt"
	_ "gonum.org/v1/plot"
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/health/grpc_health_v1"
	_ "google.golang.org/grpc/reflection"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/kubernetes/fake"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "knative.dev/serving/pkg/apis/autoscaling"
	_ "knative.dev/serving/pkg/apis/serving/v1"
	_ "knative.dev/serving/pkg/client/clientset/versioned"
	_ "knative.dev/serving/pkg/client/clientset/versioned/fake"
	_ "sigs.k8s.io/controller-runtime/pkg/envtest"
	_ "sigs.k8s.io/yaml"
)
