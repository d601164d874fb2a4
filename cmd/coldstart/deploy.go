package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/cmd/internal/cliopts"
	"github.com/coldstart-go/coldstart/internal/provenance"
	"github.com/coldstart-go/coldstart/knative"
)

// deployOptions are coldstart deploy's flags.
type deployOptions struct {
	stderr io.Writer // the command's error writer: progress and logs
	Arms   []string
	Images []string // ARM=REF@sha256:HEX, as given
	// Cluster is --namespace, --kubeconfig and --context (--name-prefix is
	// Service.NamePrefix).
	cliopts.Cluster
	DryRun  bool
	Delete  bool
	Timeout time.Duration
	// Budget is --budget: the pods' requests and limits (parsePodBudget).
	Budget podBudget
	// CPU and Memory are the deprecated --cpu and --memory, the same as
	// --budget cores=CPU,mem=MEMORY.
	CPU     float64
	Memory  string
	Verbose bool // print each API request
	Quiet   bool // no progress lines
	// Pkg and CacheDir are for --dry-run only: the image arm, when given
	// no --image, is built locally from Pkg ("" = the sample server).
	Pkg      string
	CacheDir string

	InitialScale string // "auto" or a count
	Service      knative.ServiceOptions
	Annotations  []string // KEY=VALUE
	// Env (K=V) and EnvSecrets (K=SECRET:KEY) are the container's
	// environment, as given; validate puts them in Service.Env.
	Env        []string
	EnvSecrets []string
	// Levers are --lever, as given: each arm is also deployed as its
	// variant under each (knative.Lever).
	Levers []string
	// Parallel is --parallel: each arm also gets the copies run --on
	// knative --parallel with the same list scales at once.
	Parallel string

	arms []knative.Arm // from validate
}

func newDeployCmd(run func(context.Context, *deployOptions, io.Writer) error) *cobra.Command {
	o := &deployOptions{Timeout: 5 * time.Minute, InitialScale: "auto", Service: knative.DefaultServiceOptions()}
	o.Service.Namespace = ""
	cmd := &cobra.Command{
		Use:   "deploy [flags] [PKG]",
		Short: "Deploy each arm's image as a Knative Service set up for scale-to-zero, or delete them",
		Long: `deploy creates or updates one serving.knative.dev/v1 Service per arm (named coldstart-ARM),
from the image of that arm by digest: gRPC port named h2c, the server on $PORT, CPU and
memory requests and limits from --budget, no service links, and autoscaling
annotations that let each revision go to zero and come back promptly. It waits until
each Service is Ready and prints its URL. --dry-run prints the manifests instead and
touches no cluster or registry: there the image arm needs no --image, as it is built
locally from PKG (default: the bundled sample server) and shown by its local digest,
marked as not pushed. --delete removes the Services deploy created (labelled app.kubernetes.io/managed-by=coldstart).
The cluster comes from --kubeconfig, $KUBECONFIG, ~/.kube/config or the in-cluster account.
Progress goes to stderr (-q: none); -v also prints each API request.`,
		Example: `  coldstart deploy --dry-run
  coldstart deploy --dry-run --image default=registry.example/echo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
  coldstart deploy --namespace bench --image default=REPO@sha256:HEX --image upx=REPO@sha256:HEX --budget cores=0.5,mem=256Mi
  coldstart deploy --namespace bench --delete`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.stderr = cmd.ErrOrStderr()
			if len(args) == 1 {
				o.Pkg = args[0]
			}
			if err := o.validate(); err != nil {
				return err
			}
			return run(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.Arms, "arms", nil, "arms to deploy or delete, comma-separated (default: every arm given an --image; with --delete: all)")
	f.StringArrayVar(&o.Images, "image", nil, "ARM=REPO@sha256:HEX: the arm's image by digest (repeat per arm), e.g. from the image arm's --push")
	o.Cluster.Bind(cmd)
	f.BoolVar(&o.DryRun, "dry-run", false, "print the Services as YAML and touch no cluster (the image arm without --image: built locally, marked not pushed)")
	f.StringVar(&o.CacheDir, "cache-dir", "", `--dry-run: build cache for the local image arm ("" = ${XDG_CACHE_HOME:-~/.cache}/coldstart/builds)`)
	f.BoolVar(&o.Delete, "delete", false, "delete the Services deploy created (only those labelled app.kubernetes.io/managed-by=coldstart)")
	timeoutVar(f, &o.Timeout, "wait-timeout", "wait this long for all Services to be Ready (0 = do not wait)")
	f.Var(&o.Budget, "budget", "the pods' CPU and memory requests and limits: one budget as run's --budget takes it, of which cores=N (0.5, 500m) and mem=SIZE (256Mi) apply, e.g. cores=0.5,mem=256Mi (max = none)")
	f.Float64Var(&o.CPU, "cpu", 0, "CPU request and limit in cores (0 = none)")
	f.StringVar(&o.Memory, "memory", "", "memory request and limit, e.g. 256Mi (\"\" = none)")
	_ = f.MarkDeprecated("cpu", "use --budget cores=N")
	_ = f.MarkDeprecated("memory", "use --budget mem=SIZE")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "also print each Kubernetes API request (method and URL) to stderr, and each command line of a --dry-run build")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress lines on stderr (results, notes and errors still)")

	s := &o.Service
	f.StringVar(&s.NamePrefix, "name-prefix", s.NamePrefix, "Service name prefix; the name is PREFIX+ARM")
	f.Int32Var(&s.Port, "port", s.Port, "container port, passed to the server as $PORT")
	f.StringArrayVar(&s.Args, "arg", nil, "container argument (repeat; default: the image's own)")
	f.IntVar(&s.MinScale, "min-scale", s.MinScale, "autoscaling.knative.dev/min-scale (pods kept when idle)")
	f.StringVar(&o.InitialScale, "initial-scale", o.InitialScale, "autoscaling.knative.dev/initial-scale: a pod count, or auto (0 if the cluster sets allow-zero-initial-scale, else 1)")
	f.DurationVar(&s.Window, "window", s.Window, "autoscaling.knative.dev/window, the stable window (6s to 1h; 0 = the cluster's)")
	f.DurationVar(&s.RetentionPeriod, "scale-to-zero-retention", s.RetentionPeriod, "autoscaling.knative.dev/scale-to-zero-pod-retention-period (0s = drop the last pod at once)")
	f.IntVar(&s.TargetBurstCapacity, "target-burst-capacity", s.TargetBurstCapacity, "autoscaling.knative.dev/target-burst-capacity (0 = activator only at zero, -1 = always)")
	f.Int64Var(&s.ContainerConcurrency, "container-concurrency", s.ContainerConcurrency, "requests in flight per pod (0 = unlimited)")
	f.BoolVar(&s.GRPCReadiness, "grpc-readiness", s.GRPCReadiness, "readiness probe is a gRPC health check on --port (false = Knative's TCP default)")
	f.StringArrayVar(&o.Env, "env", nil, "K=V: an environment variable of the server container (repeat); the value is in the manifest, so keep secrets to --env-secret")
	f.StringArrayVar(&o.EnvSecrets, "env-secret", nil, "K=SECRET:KEY: the server's variable K from key KEY of the Kubernetes Secret SECRET in the Services' namespace, which you create (repeat); the value never passes through coldstart nor is in the manifest")
	f.StringArrayVar(&o.Annotations, "annotation", nil, "KEY=VALUE on the revision template, overriding the above (repeat)")
	f.StringVar(&o.Parallel, "parallel", "", "also deploy the copies of each arm that run --on knative --parallel with this list (e.g. 1,5,25) scales from zero at once: a disjoint set per N, the Services coldstart-ARM-copyK for K from 1 to the list's sum (with 1 added when missing)")
	f.StringArrayVar(&o.Levers, "lever", nil, "also deploy each arm as its variant under this platform lever, the Service coldstart-ARM-LEVER, for run --on knative --lever to compare (repeat): "+strings.Join(knative.LeverNames(), ", ")+"; see docs/knative.md")
	cmd.MarkFlagsMutuallyExclusive("dry-run", "delete")
	cmd.MarkFlagsMutuallyExclusive("budget", "cpu")
	cmd.MarkFlagsMutuallyExclusive("budget", "memory")
	cmd.MarkFlagsMutuallyExclusive("verbose", "quiet")
	cmd.SetFlagErrorFunc(cliopts.FlagError)
	return cmd
}

func (o *deployOptions) validate() error {
	images := map[string]string{}
	for _, kv := range o.Images {
		arm, ref, ok := strings.Cut(kv, "=")
		if !ok || arm == "" || ref == "" {
			return fmt.Errorf("--image: %q, want ARM=REPO@sha256:HEX", kv)
		}
		if _, dup := images[arm]; dup {
			return fmt.Errorf("--image: arm %s given twice", arm)
		}
		if _, err := knative.ParseDigest(ref); err != nil {
			return fmt.Errorf("--image %s: %w", arm, err)
		}
		images[arm] = ref
	}
	if o.Timeout < 0 {
		return fmt.Errorf("--wait-timeout: %v, want 0 or a positive duration", o.Timeout)
	}
	b := o.Budget.Budget
	if o.CPU < 0 {
		return fmt.Errorf("--cpu: %v, want cores ≥ 0, e.g. 0.5", o.CPU)
	}
	if o.CPU > 0 {
		b.Cores = o.CPU
	}
	if o.Memory != "" {
		n, err := budget.ParseSize(o.Memory)
		if err != nil {
			return fmt.Errorf("--memory: %w", err)
		}
		b.MemBytes = n
	}
	switch o.InitialScale {
	case "auto":
		o.Service.InitialScale = knative.AutoInitialScale
	default:
		n, err := strconv.Atoi(o.InitialScale)
		if err != nil || n < 0 {
			return fmt.Errorf("--initial-scale: %q, want auto or a count ≥ 0", o.InitialScale)
		}
		o.Service.InitialScale = n
	}
	if o.Service.Window != 0 && (o.Service.Window < 6*time.Second || o.Service.Window > time.Hour) {
		return fmt.Errorf("--window: %v, want 6s to 1h (or 0 for the cluster's)", o.Service.Window)
	}
	for _, kv := range o.Annotations {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--annotation: %q, want KEY=VALUE", kv)
		}
		if o.Service.Annotations == nil {
			o.Service.Annotations = map[string]string{}
		}
		o.Service.Annotations[k] = v
	}
	if err := o.env(); err != nil {
		return err
	}
	if o.Pkg != "" && !o.DryRun {
		return fmt.Errorf("PKG %s: only with --dry-run, which builds the image arm locally; deploy takes pushed images (--image ARM=REPO@sha256:HEX)", o.Pkg)
	}
	if o.Delete {
		if len(o.Images) > 0 {
			return fmt.Errorf("--image: not used with --delete")
		}
		return nil
	}
	arms := o.Arms
	if len(arms) == 0 {
		for a := range images {
			arms = append(arms, a)
		}
		sort.Strings(arms)
	}
	if len(arms) == 0 && o.DryRun {
		arms = []string{builds.ImageArm} // built locally below
	}
	if len(arms) == 0 {
		return fmt.Errorf("--image: none given; deploy needs ARM=REPO@sha256:HEX per arm (push the image arm with `coldstart build --arms image --push REGISTRY/REPO` to get one, or preview with --dry-run)")
	}
	o.arms = nil
	for _, a := range arms {
		ref, ok := images[a]
		if !ok && !(o.DryRun && a == builds.ImageArm) {
			return fmt.Errorf("--arms: arm %s has no --image %s=REPO@sha256:HEX", a, a)
		}
		// In a dry run the image arm without --image has Image "": runDeploy
		// builds it locally.
		o.arms = append(o.arms, knative.Arm{Name: a, Image: ref, Budget: b})
	}
	levers, err := knative.ParseLevers(o.Levers)
	if err != nil {
		return fmt.Errorf("--lever: %w", err)
	}
	o.arms = knative.WithLevers(o.arms, levers)
	if o.Parallel != "" && len(levers) > 0 {
		return fmt.Errorf("--parallel: not with --lever; deploy a lever's variant and the copies in two calls")
	}
	if o.Parallel != "" {
		sizes, err := campaign.BurstSizes(o.Parallel)
		if err != nil {
			return fmt.Errorf("--parallel: %w", err)
		}
		total := 0
		for _, n := range sizes {
			total += n
		}
		o.arms = knative.WithCopies(o.arms, total)
	}
	return nil
}

// env reads --env and --env-secret into Service.Env, in that order; a
// variable given twice is refused. Errors never quote an --env value.
func (o *deployOptions) env() error {
	o.Service.Env = nil
	seen := map[string]string{} // name → the flag that gave it
	add := func(flag string, e knative.EnvVar) error {
		if err := e.Check(); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if prev, dup := seen[e.Name]; dup {
			return fmt.Errorf("%s: %s given twice (also by %s)", flag, e.Name, prev)
		}
		seen[e.Name] = flag
		o.Service.Env = append(o.Service.Env, e)
		return nil
	}
	for _, kv := range o.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("--env: %q, want K=V", provenance.RedactEnv(kv))
		}
		if err := add("--env", knative.EnvVar{Name: k, Value: v}); err != nil {
			return err
		}
	}
	for _, kv := range o.EnvSecrets {
		k, ref, ok := strings.Cut(kv, "=")
		secret, key, ok2 := strings.Cut(ref, ":")
		if !ok || !ok2 || k == "" || secret == "" || key == "" {
			return fmt.Errorf("--env-secret: %q, want K=SECRET:KEY (variable K from key KEY of Secret SECRET)", kv)
		}
		if err := add("--env-secret", knative.EnvVar{Name: k, Secret: secret, Key: key}); err != nil {
			return err
		}
	}
	return nil
}

// podBudget is deploy's --budget as a pflag.Value (parsePodBudget reads
// it); the zero value is max, no requests or limits.
type podBudget struct{ budget.Budget }

func (p *podBudget) String() string { return p.Budget.String() }

// Type names the flag's value in help text.
func (p *podBudget) Type() string { return "budget" }

// Set parses one budget; errors leave the flag's name to pflag.
func (p *podBudget) Set(s string) error {
	b, err := parsePodBudget(s)
	if err != nil {
		return err
	}
	p.Budget = b
	return nil
}

// parsePodBudget reads deploy's --budget: one item of the budget grammar
// the measuring commands' --budget takes (package budget), "max" for none,
// else cores=N and mem=SIZE, comma-separated. cores= is read as Kubernetes
// reads a CPU quantity (0.5, 500m: the grammar's forms), and unlike
// budget.ParseOne it is not checked against this machine's CPUs: the pods
// run on the cluster's nodes. cpus= has no Kubernetes equivalent here (the
// static CPU manager pins whole cores on its own) and is refused.
func parsePodBudget(s string) (budget.Budget, error) {
	var b budget.Budget
	s = strings.TrimSpace(s)
	if s == "max" || s == "" {
		return b, nil
	}
	if strings.Contains(s, ";") {
		return b, fmt.Errorf("%q: deploy takes one budget, not a list", s)
	}
	seen := map[string]bool{}
	for tok := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(tok), "=")
		if !ok {
			return b, fmt.Errorf("malformed item %q: want cores=N, mem=SIZE or max, e.g. cores=0.5,mem=256Mi", s)
		}
		if seen[k] {
			return b, fmt.Errorf("%s given twice in %q", k, s)
		}
		seen[k] = true
		switch k {
		case "cores":
			q, err := resource.ParseQuantity(v)
			if err != nil || q.MilliValue() < 1 {
				return b, fmt.Errorf("cores=%s in %q: want a CPU count of at least 1m, e.g. 0.5 or 500m", v, s)
			}
			b.Cores = float64(q.MilliValue()) / 1000
		case "mem":
			n, err := budget.ParseSize(v)
			if err != nil {
				return b, fmt.Errorf("%v in %q", err, s)
			}
			if n <= 0 {
				return b, fmt.Errorf("memory limit %q in %q must be > 0", v, s)
			}
			b.MemBytes = n
		case "cpus":
			return b, fmt.Errorf("cpus= in %q: a CPU set has no Kubernetes equivalent here; give the pods a quota with cores=", s)
		default:
			return b, fmt.Errorf("unknown key %q in %q (known: cores=N, mem=SIZE, or max)", k, s)
		}
	}
	return b, nil
}

// NotPushedRepo is the repository a dry run shows a locally built,
// unpushed image under, before its digest. The .invalid domain (RFC 2606)
// never resolves, so a manifest applied by mistake fails to pull rather
// than pulling something else.
const NotPushedRepo = "not-pushed.invalid/coldstart/"

// localImage builds the image arm locally for a dry run (cached like
// coldstart build's) and returns its artifact, whose Digest the manifest
// shows.
func (o *deployOptions) localImage(ctx context.Context) (builds.Artifact, error) {
	src := builds.Source{Pkg: o.Pkg}
	if o.Pkg == "" {
		s, err := builds.SampleSource()
		if err != nil {
			return builds.Artifact{}, err
		}
		src = s
	}
	bo := builds.Options{CacheDir: o.CacheDir, Verbose: o.Verbose, Progress: o.progress()}
	builds.SetImageOptions() // no push: a dry run touches no registry either
	arts, errs := builds.BuildAll(ctx, src, []string{builds.ImageArm}, bo)
	if errs[0] != nil {
		return builds.Artifact{}, fmt.Errorf("--dry-run: build the image arm locally: %w", errs[0])
	}
	if arts[0].Digest == "" {
		return builds.Artifact{}, fmt.Errorf("--dry-run: the image arm built locally has no digest")
	}
	return arts[0], nil
}

// dryRun prints the Services as YAML. An arm without an image (the image
// arm) is built locally and shown by its local digest under NotPushedRepo,
// its manifest preceded by a comment saying it is not pushed (also said on
// the error writer).
func (o *deployOptions) dryRun(ctx context.Context, w io.Writer, so knative.ServiceOptions) error {
	notes := map[string]string{} // service name → why it is not deployable as is
	arms := append([]knative.Arm(nil), o.arms...)
	for i, a := range arms {
		if a.Image != "" {
			continue
		}
		art, err := o.localImage(ctx)
		if err != nil {
			return err
		}
		arms[i].Image = NotPushedRepo + a.Name + "@" + art.Digest
		note := fmt.Sprintf("arm %s: not pushed: %s is the local build (OCI layout %s); no cluster can pull it. "+
			"Push it with `coldstart build --arms image --push REGISTRY/REPO` and pass --image %s=REPO@sha256:HEX.",
			a.Name, art.Digest, art.Image, a.Name)
		notes[so.ServiceName(a.Variant())] = note
		fmt.Fprintf(o.stderr, "deploy: %s\n", note)
	}
	svcs, err := knative.Services(arms, so)
	if err != nil {
		return err
	}
	for i, s := range svcs {
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if note, ok := notes[s.Name]; ok {
			if _, err := fmt.Fprintf(w, "# NOT PUSHED: %s\n", note); err != nil {
				return err
			}
		}
		if err := knative.WriteYAML(w, []*servingv1.Service{s}); err != nil {
			return err
		}
	}
	return nil
}

// runDeploy deploys, deletes, or prints the arms' Services.
func runDeploy(ctx context.Context, o *deployOptions, w io.Writer) error {
	so := o.Service
	if o.DryRun {
		if so.Namespace = o.Namespace; so.Namespace == "" {
			so.Namespace = "default"
		}
		return o.dryRun(ctx, w, so)
	}
	var wrap func(http.RoundTripper) http.RoundTripper
	if o.Verbose {
		tr := &apiTrace{w: o.stderr}
		wrap = func(rt http.RoundTripper) http.RoundTripper { return apiTraceTransport{tr, rt} }
	}
	c, ns, err := o.Cluster.Clients(wrap)
	if err != nil {
		return err
	}
	log := o.progress()
	if o.Delete {
		names, err := knative.Delete(ctx, c, ns, o.Arms)
		for _, n := range names {
			fmt.Fprintf(w, "deleted %s/%s\n", ns, n)
		}
		if err == nil && len(names) == 0 {
			fmt.Fprintf(w, "no coldstart services in %s\n", ns)
		}
		return err
	}
	so.Namespace = ns
	out, err := knative.Deploy(ctx, c, o.arms, knative.DeployOptions{Service: so, Timeout: o.Timeout, Log: log})
	if err != nil {
		return err
	}
	return writeDeployed(w, out)
}

// progress is where progress lines go: stderr, or nowhere under -q.
func (o *deployOptions) progress() io.Writer {
	if o.Quiet {
		return nil
	}
	return o.stderr
}

// apiTrace writes "+ METHOD URL" for each Kubernetes API request under
// -v, as the measuring commands' -v prints each spawned command line: what
// deploy asked of the cluster, in order. Client-go sends from several
// goroutines (requests and watches), so writes are serialized.
type apiTrace struct {
	mu sync.Mutex
	w  io.Writer
}

type apiTraceTransport struct {
	t  *apiTrace
	rt http.RoundTripper
}

func (a apiTraceTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	a.t.mu.Lock()
	fmt.Fprintf(a.t.w, "+ %s %s\n", r.Method, r.URL.Redacted())
	a.t.mu.Unlock()
	return a.rt.RoundTrip(r)
}

func writeDeployed(w io.Writer, ds []knative.Deployed) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tlever\tservice\tcreated\tready\trevision\turl")
	for _, d := range ds {
		lever := d.Lever
		if lever == "" {
			lever = "–"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%v\t%v\t%s\t%s\n", d.Arm, lever, d.Namespace, d.Service, d.Created, d.Ready, d.Revision, d.URL)
	}
	return tw.Flush()
}
