package record

import "time"

// PodMemoryKind is the record kind of a PodMemory.
const PodMemoryKind = "pod_memory"

// PodMemory is what one idle pod of a Service holds, from the kubelet's
// stats summary (cAdvisor's cgroup figures): each container's working
// set and RSS, and the pod's whole cgroup, whose excess over its
// containers is the sandbox (the pause container and the pod's own
// cgroup). On Knative an idle instance is this pod, the queue-proxy
// sidecar included, not the server process alone.
type PodMemory struct {
	Arm     string `json:"arm"`
	Service string `json:"service"`
	Pod     string `json:"pod"`
	Node    string `json:"node"`
	// At is the kubelet's sample time of the pod's figures.
	At time.Time `json:"at"`
	// Containers are the pod's containers by name (the user container,
	// queue-proxy), sorted by name.
	Containers []ContainerMemory `json:"containers"`
	// PodWorkingSetBytes is the pod cgroup's working set; SandboxBytes
	// is its excess over the containers' sum (nil when either is missing).
	PodWorkingSetBytes *uint64 `json:"pod_working_set_bytes"`
	SandboxBytes       *int64  `json:"sandbox_bytes"`
	// PodCPUNanoCores is the pod's CPU use averaged over the kubelet's
	// last sampling interval: an idle pod's cost in CPU.
	PodCPUNanoCores *uint64 `json:"pod_cpu_nanocores"`
}

// ContainerMemory is one container's figures in a PodMemory.
type ContainerMemory struct {
	Name            string  `json:"name"`
	WorkingSetBytes *uint64 `json:"working_set_bytes"`
	RSSBytes        *uint64 `json:"rss_bytes"`
	CPUNanoCores    *uint64 `json:"cpu_nanocores"`
}
