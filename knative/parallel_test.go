package knative

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParallelCopies(t *testing.T) {
	got := fmt.Sprint(ParallelCopies([]int{1, 5, 25}))
	if !strings.HasPrefix(got, "[[1] [2 3 4 5 6] [7 8 9 ") || !strings.HasSuffix(got, " 30 31]]") {
		t.Errorf("ParallelCopies(1,5,25) = %s, want [1], 2-6, 7-31", got)
	}
	for _, tt := range []struct {
		sizes []int
		want  string
	}{
		{nil, "no sizes given"},
		{[]int{1, 0}, "0: want N ≥ 1"},
		{[]int{1, 5, 5}, "5 given twice"},
	} {
		if err := CheckParallelSizes(tt.sizes); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("CheckParallelSizes(%v) = %v, want %q", tt.sizes, err, tt.want)
		}
	}
}

// TestParallelCopiesDeployed: deploy makes the copies run scales, named
// and labelled per copy; a campaign whose copies are missing is refused
// before any probe, saying how to deploy them.
func TestParallelCopiesDeployed(t *testing.T) {
	ctx := context.Background()
	c := fakeCluster(t, "bench", true)
	fakeController(c, always(true))
	got, err := Deploy(ctx, c, WithCopies(testArms()[1:], 3), testDeployOptions("bench"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range got {
		names = append(names, d.Service)
	}
	if strings.Join(names, " ") != "coldstart-default coldstart-default-copy1 coldstart-default-copy2 coldstart-default-copy3" {
		t.Errorf("deployed %v", names)
	}
	svc, err := c.Serving.Services("bench").Get(ctx, "coldstart-default-copy2", metav1.GetOptions{})
	if err != nil || svc.Labels[LabelCopy] != "2" || svc.Labels[LabelArm] != "default" {
		t.Errorf("copy 2: %v, labels %v", err, svc.Labels)
	}
	p := Parallel{ColdStart: ColdStart{Clients: c, Namespace: "bench", Arms: []string{"default"}, NamePrefix: "coldstart-", Runs: 1,
		Activator: true, Target: "127.0.0.1:1"}, Sizes: []int{1, 5}}
	_, err = p.Run(ctx, func(string, any) error { t.Error("a record was written"); return nil })
	if err == nil || !strings.Contains(err.Error(), "coldstart-default-copy4") || !strings.Contains(err.Error(), "coldstart deploy --arms default --parallel 1,5 makes the copies") {
		t.Errorf("Run with copies 4-6 missing = %v", err)
	}
}
