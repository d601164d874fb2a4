package knative

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"knative.dev/serving/pkg/apis/serving"

	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/record"
)

// PodMemory and ContainerMemory are record's: the report reads them.
type (
	PodMemory       = record.PodMemory
	ContainerMemory = record.ContainerMemory
)

// ErrNoPodStats: the kubelet's summary has no figures for the pod yet
// (it samples every few seconds; a pod just started may not be in it).
var ErrNoPodStats = errors.New("no stats for the pod yet")

// IdlePodMemory reads, for each Running pod of service, its containers'
// memory from the kubelet of its node through the API server's node
// proxy (/api/v1/nodes/NODE/proxy/stats/summary?only_cpu_and_memory=true:
// the full summary also reads file systems, which fails on some nodes).
// This needs the nodes/proxy permission. The reply is the kubelet's, and
// only the pods asked for are taken from it.
func IdlePodMemory(ctx context.Context, c Clients, namespace, arm, service string) ([]PodMemory, error) {
	if c.REST == nil {
		return nil, errors.New("pod memory: no REST client (the kubelet's stats are read through the API server)")
	}
	sel := labels.Set{serving.ServiceLabelKey: service}.String()
	pods, err := listAs[corev1.Pod](ctx, c.Kube.Resource(podsResource).Namespace(namespace), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list pods of service %s/%s: %w", namespace, service, err)
	}
	summaries := map[string]*statsv1alpha1.Summary{}
	var out []PodMemory
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil || p.Spec.NodeName == "" {
			continue
		}
		s := summaries[p.Spec.NodeName]
		if s == nil {
			if s, err = nodeSummary(ctx, c, p.Spec.NodeName); err != nil {
				return nil, err
			}
			summaries[p.Spec.NodeName] = s
		}
		m, err := podMemoryIn(s, namespace, p.Name)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s on node %s: %w", namespace, p.Name, p.Spec.NodeName, err)
		}
		m.Arm, m.Service = arm, service
		out = append(out, m)
	}
	return out, nil
}

// nodeSummary is a node's kubelet stats summary, CPU and memory only.
func nodeSummary(ctx context.Context, c Clients, node string) (*statsv1alpha1.Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := c.REST.Get().AbsPath("/api/v1/nodes", url.PathEscape(node), "proxy/stats/summary").
		Param("only_cpu_and_memory", "true").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kubelet stats of node %s (through the API server's node proxy; needs nodes/proxy): %w", node, err)
	}
	var s statsv1alpha1.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("kubelet stats of node %s: not a stats summary: %w", node, err)
	}
	return &s, nil
}

// podMemoryIn takes one pod's figures out of a node's summary.
func podMemoryIn(s *statsv1alpha1.Summary, namespace, pod string) (PodMemory, error) {
	for _, ps := range s.Pods {
		if ps.PodRef.Namespace != namespace || ps.PodRef.Name != pod {
			continue
		}
		m := PodMemory{Pod: pod, Node: s.Node.NodeName}
		var sum uint64
		complete := len(ps.Containers) > 0
		for _, cs := range ps.Containers {
			cm := ContainerMemory{Name: cs.Name}
			if cs.Memory != nil {
				cm.WorkingSetBytes, cm.RSSBytes = cs.Memory.WorkingSetBytes, cs.Memory.RSSBytes
			}
			if cs.CPU != nil {
				cm.CPUNanoCores = cs.CPU.UsageNanoCores
			}
			if cm.WorkingSetBytes == nil {
				complete = false
			} else {
				sum += *cm.WorkingSetBytes
			}
			m.Containers = append(m.Containers, cm)
		}
		sort.Slice(m.Containers, func(i, j int) bool { return m.Containers[i].Name < m.Containers[j].Name })
		if ps.Memory != nil {
			m.PodWorkingSetBytes = ps.Memory.WorkingSetBytes
			m.At = ps.Memory.Time.Time
		}
		if ps.CPU != nil {
			m.PodCPUNanoCores = ps.CPU.UsageNanoCores
		}
		if !complete || m.PodWorkingSetBytes == nil {
			return m, ErrNoPodStats
		}
		sb := int64(*m.PodWorkingSetBytes) - int64(sum)
		m.SandboxBytes = &sb
		return m, nil
	}
	return PodMemory{}, ErrNoPodStats
}

// IdleMemory wakes each arm's Service (one probe, as a cold start's),
// keeps it warm with a probe a second, and reads its pod's memory
// (IdlePodMemory) from the first kubelet sample taken after the pod
// answered: an idle instance as a kept-warm policy pays for it, having
// served its first request. It gives up on an arm after wait; the other
// arms are still read, and the errors joined.
func (c ColdStart) IdleMemory(ctx context.Context, wait time.Duration) ([]PodMemory, error) {
	checker := c.Checker
	if checker == nil {
		checker = prober.Health{}
	}
	probe := CheckerProbe(checker)
	var out []PodMemory
	var errs []error
	for _, arm := range c.Arms {
		ms, err := c.idleMemory(ctx, arm, probe, wait)
		if err != nil {
			errs = append(errs, fmt.Errorf("idle pod memory of %s: %w", arm, err))
			continue
		}
		out = append(out, ms...)
	}
	return out, errors.Join(errs...)
}

func (c ColdStart) idleMemory(ctx context.Context, arm string, probe ProbeFunc, wait time.Duration) ([]PodMemory, error) {
	service := c.NamePrefix + arm
	o := MeasureOptions{Namespace: c.Namespace, Service: service, Target: c.Target, Activator: c.Activator}
	svc, err := c.Clients.Serving.Services(o.Namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", o.Namespace, service, err)
	}
	if o.Activator {
		if o.Authority, err = activatorAuthority(svc); err != nil {
			return nil, err
		}
	}
	target, authority, err := probeAddress(o, urlString(svc.Status.URL), addressURL(svc.Status.Address))
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var answered time.Time
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		_, perr := probe(pctx, target, authority)
		pcancel()
		if perr == nil && answered.IsZero() {
			answered = time.Now()
		}
		if !answered.IsZero() {
			ms, err := IdlePodMemory(ctx, c.Clients, c.Namespace, arm, service)
			switch {
			case err == nil && len(ms) > 0 && ms[0].At.After(answered.Add(time.Second)):
				return ms, nil
			case err != nil && !errors.Is(err, ErrNoPodStats):
				return nil, err
			}
			last = err
		} else {
			last = perr
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = errors.New("no kubelet sample after the pod answered")
			}
			return nil, fmt.Errorf("within %v: %w", wait, last)
		case <-time.After(time.Second):
		}
	}
}
