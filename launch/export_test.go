package launch

// WithoutCgroup is l making no cgroup for a server whose budget needs
// none, as where none can be made: the subreaper's case, for tests.
func WithoutCgroup(l Process) Process {
	l.noCgroup = true
	return l
}

// RootIsInitramfs and CrunHierarchy are the checks behind Runc's
// automatic --no-pivot and crun's refusal of a hybrid host.
var (
	RootIsInitramfs = rootIsInitramfs
	CrunHierarchy   = crunHierarchy
)
