package knative

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// testdata/stats-summary.json is a real kubelet reply
// (/stats/summary?only_cpu_and_memory=true) from the knode, taken while
// the sample's default, static and upx revisions each had a pod.
func readSummary(t *testing.T) (*statsv1alpha1.Summary, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile("testdata/stats-summary.json")
	if err != nil {
		t.Fatal(err)
	}
	var s statsv1alpha1.Summary
	var generic map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &generic); err != nil {
		t.Fatal(err)
	}
	return &s, generic
}

// TestPodMemoryIn: each Knative pod of the reply gives both containers
// (queue-proxy and the user container, by name), the pod's working set,
// and the sandbox as the pod's excess over the two, the figures read from
// the reply itself.
func TestPodMemoryIn(t *testing.T) {
	s, generic := readSummary(t)
	n := 0
	for _, p := range generic["pods"].([]any) {
		p := p.(map[string]any)
		ref := p["podRef"].(map[string]any)
		if ref["namespace"] != "coldstart-knode" {
			continue
		}
		n++
		name := ref["name"].(string)
		want := map[string]uint64{}
		var sum uint64
		for _, c := range p["containers"].([]any) {
			c := c.(map[string]any)
			ws := uint64(c["memory"].(map[string]any)["workingSetBytes"].(float64))
			want[c["name"].(string)] = ws
			sum += ws
		}
		pod := uint64(p["memory"].(map[string]any)["workingSetBytes"].(float64))
		m, err := podMemoryIn(s, "coldstart-knode", name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(m.Containers) != 2 || m.Containers[0].Name != "queue-proxy" || m.Containers[1].Name != "server" {
			t.Errorf("%s: containers %+v, want queue-proxy and server", name, m.Containers)
		}
		for _, c := range m.Containers {
			if c.WorkingSetBytes == nil || *c.WorkingSetBytes != want[c.Name] || c.RSSBytes == nil {
				t.Errorf("%s %s: working set %v (RSS %v), want %d and an RSS", name, c.Name, c.WorkingSetBytes, c.RSSBytes, want[c.Name])
			}
		}
		if m.PodWorkingSetBytes == nil || *m.PodWorkingSetBytes != pod {
			t.Errorf("%s: pod working set %v, want %d", name, m.PodWorkingSetBytes, pod)
		}
		if m.SandboxBytes == nil || *m.SandboxBytes != int64(pod)-int64(sum) || *m.SandboxBytes <= 0 {
			t.Errorf("%s: sandbox %v, want %d (the pod's excess over its containers)", name, m.SandboxBytes, int64(pod)-int64(sum))
		}
		if m.Node != "knode" || m.At.IsZero() {
			t.Errorf("%s: node %q, at %v", name, m.Node, m.At)
		}
	}
	if n != 3 {
		t.Errorf("%d pods of the sample's arms in the reply, want 3", n)
	}
	if _, err := podMemoryIn(s, "coldstart-knode", "no-such-pod"); !errors.Is(err, ErrNoPodStats) {
		t.Errorf("a pod not in the reply: %v, want ErrNoPodStats", err)
	}
	if _, err := podMemoryIn(s, "other", "coldstart-static-00001-deployment-d9f79fb49-9xhsh"); !errors.Is(err, ErrNoPodStats) {
		t.Errorf("the right name in another namespace: %v, want ErrNoPodStats", err)
	}
}

// A pod the kubelet has not sampled yet (containers without memory) is
// ErrNoPodStats, not a pod of zero bytes.
func TestPodMemoryInUnsampled(t *testing.T) {
	s, _ := readSummary(t)
	for i := range s.Pods {
		if s.Pods[i].PodRef.Namespace == "coldstart-knode" {
			s.Pods[i].Containers[0].Memory = nil
			if _, err := podMemoryIn(s, "coldstart-knode", s.Pods[i].PodRef.Name); !errors.Is(err, ErrNoPodStats) {
				t.Errorf("an unsampled container: %v, want ErrNoPodStats", err)
			}
			return
		}
	}
	t.Fatal("no pod of the sample's arms in the reply")
}
