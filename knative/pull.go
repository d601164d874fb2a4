package knative

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/pull"
	"github.com/coldstart-go/coldstart/record"
)

// AnnotationRound is set on the revision template of a pull lever's
// variant to the round it was rolled for: a new revision each round, also
// when the image is the same (pull=cached).
const AnnotationRound = "coldstart-go.github.io/round"

// pullCached is the pull lever's value for its control: a new revision
// each round, of an image pulled once.
const pullCached = "cached"

// IsPull says l is a pull lever (pull=BANDWIDTH or pull=cached), whose
// rounds serve the arm's image (ColdStart.PullImages).
func (l Lever) IsPull() bool { return l.kind.name == "pull" }

// pullBandwidth is a pull lever's registry link cap (pull.Max for
// pull=cached, whose image is served once, before the counted starts).
func (l Lever) pullBandwidth() pull.Bandwidth {
	if l.value == pullCached {
		return pull.Max
	}
	b, _ := pull.ParseBandwidth(l.value) // ParseLever checked it
	return b
}

func checkPullValue(v string) error {
	if v == pullCached {
		return nil
	}
	if _, err := pull.ParseBandwidth(v); err != nil {
		return fmt.Errorf("want cached or a bandwidth: %w", err)
	}
	return nil
}

// pullRegistries are the registries one campaign's pull levers serve
// their images from, one per bandwidth (a token bucket is one link).
type pullRegistries map[pull.Bandwidth]*pull.Registry

func (rs pullRegistries) get(b pull.Bandwidth) (*pull.Registry, error) {
	if r := rs[b]; r != nil {
		return r, nil
	}
	r, err := pull.StartRegistry(0)
	if err != nil {
		return nil, err
	}
	r.SetBandwidth(b)
	rs[b] = r
	return r, nil
}

func (rs pullRegistries) close() {
	for _, r := range rs {
		r.Close()
	}
}

// imageRoll gives a pull lever's variant a new revision before each of its
// starts, of an image that coldstart's registry on this machine serves:
// under pull=BANDWIDTH the arm's image salted anew each round (pull.Salt),
// so that no node has any of its layers and the start pulls all of it;
// under pull=cached the same salted image every round, pulled at the
// warm-up round and cached on the node after it.
type imageRoll struct {
	c               Clients
	namespace, name string
	lever           Lever
	src             v1.Image
	reg             *pull.Registry
	repo            string
	nonce           string // this campaign's: no earlier campaign's image is the same
	timeout         time.Duration
	img             v1.Image // the image pushed last
	ref, revision   string
	bytes           int64
	servedBefore    int64
}

func newImageRoll(c Clients, namespace, service string, l Lever, src v1.Image, reg *pull.Registry) (*imageRoll, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	return &imageRoll{c: c, namespace: namespace, name: service, lever: l, src: src, reg: reg,
		repo: "coldstart/" + service, nonce: hex.EncodeToString(b), timeout: 5 * time.Minute}, nil
}

// next pushes run's image (a new one unless pull=cached has one) and rolls
// the Service to it, returning once its new revision is the latest ready
// one: the revision this run's start is of.
func (r *imageRoll) next(ctx context.Context, run int) error {
	if r.ref == "" || r.lever.value != pullCached {
		salt := "coldstart " + r.nonce
		if r.lever.value != pullCached {
			salt += " round " + strconv.Itoa(run)
		}
		img, err := pull.Salt(r.src, salt)
		if err != nil {
			return fmt.Errorf("lever %s: %w", r.lever.Name, err)
		}
		r.img = img
		if r.bytes, err = pull.ImageBytes(img); err != nil {
			return fmt.Errorf("lever %s: size of the image: %w", r.lever.Name, err)
		}
		if r.ref, err = r.reg.PushImage(ctx, r.repo, fmt.Sprintf("%s-r%d", r.nonce, run), img); err != nil {
			return fmt.Errorf("lever %s: %w", r.lever.Name, err)
		}
	}
	sc := r.c.Serving.Services(r.namespace)
	var gen int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := sc.Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(svc.Spec.Template.Spec.Containers) == 0 {
			return fmt.Errorf("service %s/%s has no container", r.namespace, r.name)
		}
		svc.Spec.Template.Spec.Containers[0].Image = r.ref
		if svc.Spec.Template.Annotations == nil {
			svc.Spec.Template.Annotations = map[string]string{}
		}
		svc.Spec.Template.Annotations[AnnotationRound] = strconv.Itoa(run)
		up, err := sc.Update(ctx, svc, metav1.UpdateOptions{})
		if err == nil {
			gen = up.Generation
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("lever %s: roll service %s/%s to %s: %w", r.lever.Name, r.namespace, r.name, r.ref, err)
	}
	rev, err := r.waitRevision(ctx, gen)
	if err != nil {
		return fmt.Errorf("lever %s: %w", r.lever.Name, err)
	}
	r.revision = rev
	r.servedBefore = r.reg.Served()
	return nil
}

// waitRevision waits until the Service is Ready at generation gen or
// later with a new revision, not the one the last run started, as its
// latest created and latest ready. It polls with plain reads, which the
// API server answers from etcd: a watch's first list may come from its
// cache and show the Service as it was before the update, still Ready
// at its old revision.
func (r *imageRoll) waitRevision(ctx context.Context, gen int64) (string, error) {
	var last *servingv1.Service
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, r.timeout, true, func(ctx context.Context) (bool, error) {
		svc, err := r.c.Serving.Services(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = svc
		st := svc.Status
		return svc.Generation >= gen && st.ObservedGeneration >= gen && svc.IsReady() &&
			st.LatestReadyRevisionName != "" && st.LatestReadyRevisionName == st.LatestCreatedRevisionName &&
			st.LatestReadyRevisionName != r.revision, nil
	})
	if err != nil {
		return "", fmt.Errorf("wait for a new ready revision of service %s/%s (generation %d): %w: %s", r.namespace, r.name, gen, err, Conditions(last))
	}
	return last.Status.LatestReadyRevisionName, nil
}

// proof is what the registry sent since next returned, and, for a
// counted start, why it is not the start the lever says ("" when it is).
func (r *imageRoll) proof(warmup bool) (*record.ImagePull, string) {
	p := &record.ImagePull{Image: r.ref, Bytes: r.bytes, ServedBytes: r.reg.Served() - r.servedBefore, Bandwidth: r.lever.value}
	if r.lever.value != pullCached {
		p.Bandwidth = r.lever.pullBandwidth().String()
	}
	switch {
	case warmup:
		return p, ""
	case r.lever.value == pullCached && p.ServedBytes > 0:
		return p, fmt.Sprintf("not a cached start: the registry sent %d bytes of %s while it ran", p.ServedBytes, r.ref)
	case r.lever.value != pullCached && p.ServedBytes < p.Bytes:
		return p, fmt.Sprintf("not a pulled start: the registry sent %d of the image's %d bytes while it ran (a node had it)", p.ServedBytes, p.Bytes)
	}
	return p, ""
}

// release drops the image of the start that just ended from the
// registry's memory, under pull=BANDWIDTH (its salt is never served
// again; pull=cached keeps its one image).
func (r *imageRoll) release(ctx context.Context) error {
	if r.lever.value == pullCached || r.img == nil {
		return nil
	}
	err := r.reg.DeleteBlobs(ctx, r.img)
	r.img = nil
	return err
}

// pullSource is arm's image for its pull levers: the one given, else the
// image its Service runs, read from its registry with the credentials of
// this machine's Docker config (never written to results).
func pullSource(ctx context.Context, c Clients, namespace, service string, given v1.Image) (v1.Image, error) {
	if given != nil {
		return given, nil
	}
	svc, err := c.Serving.Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get service %s/%s: %w", namespace, service, err)
	}
	if len(svc.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("service %s/%s has no container", namespace, service)
	}
	ref := svc.Spec.Template.Spec.Containers[0].Image
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("image %q of service %s/%s: %w", ref, namespace, service, err)
	}
	img, err := remote.Image(r, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return nil, fmt.Errorf("read image %s of service %s/%s from its registry: %w", ref, namespace, service, err)
	}
	return img, nil
}

// checkNodesHere refuses a cluster some of whose nodes are not this
// machine: they could not reach the registry a pull lever serves on
// 127.0.0.1.
func checkNodesHere(ctx context.Context, c Clients, l Lever) error {
	list, err := c.Kube.Resource(nodesResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("lever %s: list the nodes: %w", l.Name, err)
	}
	here, err := localAddrs()
	if err != nil {
		return fmt.Errorf("lever %s: %w", l.Name, err)
	}
	for i := range list.Items {
		n, err := fromUnstructured[corev1.Node](&list.Items[i])
		if err != nil {
			return err
		}
		var addrs []string
		local := false
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
				continue
			}
			addrs = append(addrs, a.Address)
			if ip := net.ParseIP(a.Address); ip != nil && here[ip.String()] {
				local = true
			}
		}
		if !local {
			return fmt.Errorf("lever %s: node %s (%s) is not this machine: its container runtime cannot pull from the registry coldstart serves on 127.0.0.1; measure image pulls on a single-node cluster on this machine (scripts/knative-node.sh), or locally with coldstart pull",
				l.Name, n.Name, strings.Join(addrs, ", "))
		}
	}
	return nil
}

func localAddrs() (map[string]bool, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("this machine's addresses: %w", err)
	}
	out := map[string]bool{}
	for _, a := range as {
		if n, ok := a.(*net.IPNet); ok {
			out[n.IP.String()] = true
		}
	}
	return out, nil
}
